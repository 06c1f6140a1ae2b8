"""CAN: Leveraging Clients As Navigators for Generative Replay in Federated Continual Learning (Rong et al., ICML 2025).

Federated class-incremental learning with generative replay, where the clients navigate: the
clients holding most of a class (teaching clients) invert their own models to synthesise it, and
every client splits its replay buffer over old classes by how much it forgets each of them.
Built on the shared runtime (:func:`icml25.federated.simulate`, Flower adapter); the baselines
(server-navigated generative replay, fine-tuning, LwF, real exemplars) share the same code.
Several details are reconstructed (the paper's code was not public): see ``CANConfig``.

Example
-------
>>> from icml25.federated.can_fcl import digits_tasks, run_fcl
>>> tasks = digits_tasks(n_tasks=2, order_seed=0)
>>> can = run_fcl(tasks, "can", n_clients=3, seed=0, rounds_per_task=2, gen_steps_per_class=20)
>>> ft = run_fcl(tasks, "finetune", n_clients=3, seed=0, rounds_per_task=2)
>>> can.acc_matrix.shape, can.acc > ft.acc, can.up_bits > ft.up_bits
((2, 2), True, True)
"""

from icml25.federated.can_fcl.can import (
    METHODS,
    CANClient,
    CANConfig,
    CANStrategy,
    FCLResult,
    build_fcl,
    fcl_mlp,
    forgetting_profile,
    run_fcl,
    task_accuracy_evaluator,
)
from icml25.federated.can_fcl.metrics import average_accuracy, average_forgetting, backward_transfer
from icml25.federated.can_fcl.navigation import allocate_buffer, select_teachers, uniform_allocation
from icml25.federated.can_fcl.streams import (
    Task,
    class_incremental_tasks,
    digits_tasks,
    gaussian_mixture,
    split_task_across_clients,
)
from icml25.federated.can_fcl.synthesis import ConditionalGenerator, bn_stat_loss, bn_statistics, invert

__all__ = [
    "METHODS", "CANClient", "CANConfig", "CANStrategy", "FCLResult", "build_fcl", "fcl_mlp", "forgetting_profile",
    "run_fcl", "task_accuracy_evaluator",
    "average_accuracy", "average_forgetting", "backward_transfer", "allocate_buffer", "select_teachers",
    "uniform_allocation", "Task", "class_incremental_tasks", "digits_tasks", "gaussian_mixture",
    "split_task_across_clients", "ConditionalGenerator", "bn_stat_loss", "bn_statistics", "invert",
]
