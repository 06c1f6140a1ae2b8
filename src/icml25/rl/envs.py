"""Small exploration environments in gymnasium's v1 API (``reset(seed=)``, 5-tuple ``step``).

``DeceptiveRooms`` is the tabular bed of :mod:`icml25.rl.hyper_exploration` (a reconstruction for this
library, not an environment of the Hyper paper): four rooms, a terminal *distractor* worth 0.1 two steps
from the start, the terminal goal worth 1.0 in the far room behind two doorways, and a dead-end room
plus side corridors that reward nothing but novelty.  Registered as ``icml25/DeceptiveRooms-v0``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium import spaces

from icml25.utils.validation import check_instance, check_scalar

__all__ = ["DeceptiveRooms"]

# '#' wall, 'S' start, 'd' distractor (+0.1, terminal), 'G' goal (+1.0, terminal), '.' floor.
LAYOUT = (
    "#############",
    "#S....#.....#",
    "#.....#.....#",
    "#d..........#",
    "#.....#.....#",
    "#.....#.....#",
    "##.######.###",
    "#.....#.....#",
    "#.#.#.#.....#",
    "#.#.#.#.....#",
    "#.#.#.#.....#",
    "#.#.#.#....G#",
    "#############",
)
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))  # up, right, down, left


class DeceptiveRooms(gymnasium.Env):
    """A 13 x 13 four-room gridworld with a near terminal distractor and a far terminal goal.

    Observation: the agent's cell as one integer ``row * 13 + col`` (``Discrete(169)``; walls are never
    occupied).  Actions: 0 up, 1 right, 2 down, 3 left; moving into a wall stays put.  Rewards: 0.1 on the
    distractor ``d`` (two steps below the start), 1.0 on the goal ``G`` (20 steps away through the
    doorways top-left -> top-right -> bottom-right); both terminate.  The bottom-left room is a dead end
    cut into side corridors (novelty without reward).  Episodes are truncated after
    ``max_episode_steps`` (100).  Deterministic: ``reset(seed=)`` only seeds ``np_random``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    n_rows = n_cols = 13
    goal_reward, distractor_reward = 1.0, 0.1

    def __init__(self, max_episode_steps: int = 100, render_mode: str | None = None) -> None:
        self.max_episode_steps = check_scalar(max_episode_steps, "max_episode_steps", "int", min=1)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        self.render_mode = render_mode
        grid = np.array([list(row) for row in LAYOUT])
        self.walls = grid == "#"
        self.start = self._index(*np.argwhere(grid == "S")[0])
        self.goal = self._index(*np.argwhere(grid == "G")[0])
        self.distractor = self._index(*np.argwhere(grid == "d")[0])
        self.observation_space = spaces.Discrete(self.n_rows * self.n_cols)
        self.action_space = spaces.Discrete(4)
        n = self.n_rows * self.n_cols
        nxt = np.arange(n)[:, None].repeat(4, axis=1)
        for r, c in np.argwhere(~self.walls):
            for a, (dr, dc) in enumerate(MOVES):
                if not self.walls[r + dr, c + dc]:
                    nxt[self._index(r, c), a] = self._index(r + dr, c + dc)
        self.transitions = nxt  # next cell of (cell, action)
        self.state: int | None = None
        self._steps = 0

    def _index(self, row: int, col: int) -> int:
        return int(row) * self.n_cols + int(col)

    @property
    def free_cells(self) -> np.ndarray:
        """The indices of the cells the agent can occupy."""
        return np.flatnonzero(~self.walls.ravel())

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        """Start at ``S``; ``seed`` (an int >= 0) reseeds ``np_random``.  ``options`` is not used."""
        if seed is not None:
            seed = check_scalar(seed, "seed", "int", min=0)
        if options is not None:
            check_instance(options, "options", dict)
        super().reset(seed=seed)
        self.state, self._steps = self.start, 0
        return self.state, {}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict]:
        """Move; returns ``(observation, reward, terminated, truncated, info)``."""
        if not self.action_space.contains(action):
            raise ValueError(f"action must be an integer in [0, 3], got {action!r}")
        if self.state is None:
            raise ValueError("the episode has ended (or never started): call reset() first")
        state = int(self.transitions[self.state, int(action)])
        reward = self.goal_reward if state == self.goal else self.distractor_reward if state == self.distractor else 0.0
        terminated = state in (self.goal, self.distractor)
        self._steps += 1
        truncated = not terminated and self._steps >= self.max_episode_steps
        self.state = None if terminated or truncated else state
        return state, reward, terminated, truncated, {}

    def render(self) -> str | None:
        """The grid as text with the agent as ``A`` (``render_mode="ansi"``)."""
        if self.render_mode != "ansi":
            return None
        rows = [list(r) for r in LAYOUT]
        if self.state is not None:
            rows[self.state // self.n_cols][self.state % self.n_cols] = "A"
        return "\n".join("".join(r) for r in rows)
