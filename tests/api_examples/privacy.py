"""Valid calls of ``icml25.privacy`` (noise calibration, lossless multiple release, sparse histograms)."""

import numpy as np

from api_examples._core import Example, Exempt
from icml25 import privacy as p

_RNG = {"rng": "a live numpy Generator the release engine threads through its per-step sampler hooks"}
# a secret or noise array of any shape is valid, zero-length included (a release of nothing is nothing)
_ANY_SHAPE = {"x": ("ndim", "empty"), "z": ("ndim", "empty"), "z_later": ("ndim", "empty"),
              "counts": ("ndim", "empty")}


def _rng():
    return np.random.default_rng(0)


class _Family(p.NoiseFamily):
    """The smallest concrete noise family: NoiseFamily is abstract, its constructor takes no arguments."""

    def check_x(self, x):
        return np.asarray(x, dtype=float)

    def sample(self, s, shape, rng):
        return np.zeros(shape)

    forward = backward = bridge = output = sample


def _released(cls, first, second, **init):
    def build():
        release = cls(np.array([1.0, 2.0, 3.0]) if cls is not p.PoissonMultipleRelease else np.array([3, 0, 5]),
                      seed=0, **init)
        release.release(**first)
        release.release(**second)
        return release
    return build


_gauss = _released(p.GaussianMultipleRelease, {"rho": 0.5}, {"rho": 2.0})
_laplace = _released(p.LaplaceMultipleRelease, {"epsilon": 1.0}, {"epsilon": 0.5})
_poisson = _released(p.PoissonMultipleRelease, {"lam": 2.0}, {"lam": 4.0})


def _family_examples(cls, name, level, x, z, *, int_noise=False):
    """The sampler-hook entries of one noise family (levels 1 < 2 < 4, elementwise over small arrays)."""
    fam = cls()
    key = f"icml25.privacy.{name}"
    def zs():
        return z.copy()

    return {
        f"{key}.check_x": Example(lambda **kw: fam.check_x(**kw), lambda: {"x": x.copy()},
                                  allow={"x": ("ndim", "empty")},
                                  labels={"x": "counts"} if int_noise else {}),
        f"{key}.sample": Example(lambda **kw: fam.sample(**kw), lambda: {"s": level, "shape": (3,), "rng": _rng()},
                                 skip=_RNG, positive=["s"], allow={"shape": "empty"}),
        f"{key}.forward": Example(lambda **kw: fam.forward(**kw),
                                  lambda: {"z": zs(), "s_from": 1.0, "s_to": 2.0, "rng": _rng()},
                                  skip=_RNG, positive=["s_from", "s_to"], allow=_ANY_SHAPE),
        f"{key}.backward": Example(lambda **kw: fam.backward(**kw),
                                   lambda: {"z_later": zs(), "s": 1.0, "s_later": 2.0, "rng": _rng()},
                                   skip=_RNG, positive=["s", "s_later"], allow=_ANY_SHAPE),
        f"{key}.bridge": Example(lambda **kw: fam.bridge(**kw),
                                 lambda: {"z_lo": zs(), "z_hi": zs() + (2 if int_noise else 0.5), "s_lo": 1.0,
                                          "s": 2.0, "s_hi": 4.0, "rng": _rng()},
                                 skip=_RNG, positive=["s_lo", "s", "s_hi"],
                                 paired=[("z_lo", "z_hi")]),
        f"{key}.output": Example(lambda **kw: fam.output(**kw), lambda: {"x": x.copy(), "z": zs()},
                                 paired=[("x", "z")]),
        f"{key}.check_level": Example(lambda **kw: fam.check_level(**kw), {"level": level}, positive=["level"]),
    }


_X = np.array([1.0, 2.0, 3.0])
_COUNTS = np.array([3, 0, 5])

EXAMPLES = {
    # calibration
    "icml25.privacy.laplace_scale": Example(p.laplace_scale, {"epsilon": 1.0, "sensitivity": 1.0},
                                            positive=["epsilon", "sensitivity"]),
    "icml25.privacy.gaussian_sigma_zcdp": Example(p.gaussian_sigma_zcdp, {"rho": 0.5, "sensitivity": 1.0},
                                                  positive=["rho", "sensitivity"]),
    "icml25.privacy.analytic_gaussian_delta": Example(p.analytic_gaussian_delta,
                                                      {"sigma": 1.0, "epsilon": 1.0, "sensitivity": 1.0},
                                                      positive=["sigma", "epsilon", "sensitivity"]),
    "icml25.privacy.analytic_gaussian_sigma": Example(p.analytic_gaussian_sigma,
                                                      {"epsilon": 1.0, "delta": 1e-5, "sensitivity": 1.0},
                                                      positive=["epsilon", "delta", "sensitivity"]),
    "icml25.privacy.poisson_delta": Example(p.poisson_delta, {"epsilon": 1.0, "lam": 5.0, "sensitivity": 1},
                                            positive=["epsilon", "lam", "sensitivity"]),
    "icml25.privacy.sample_discrete_gaussian": Example(p.sample_discrete_gaussian,
                                                       {"variance": 2.0, "shape": (3,), "seed": 0},
                                                       positive=["variance"], allow={"shape": "empty"}),
    # noise families
    "icml25.privacy.NoiseFamily": Example(_Family),
    "icml25.privacy.GaussianFamily": Example(p.GaussianFamily, {"l2_sensitivity": 1.0, "grid_bits": 20},
                                             positive=["l2_sensitivity"], allow={"grid_bits": "neg"}),
    "icml25.privacy.GaussianFamily.rho": Example(lambda **kw: p.GaussianFamily().rho(**kw), {"s": 2.0},
                                                 positive=["s"]),
    **_family_examples(p.GaussianFamily, "GaussianFamily", 2.0, _X, np.array([0.1, -0.2, 0.3])),
    "icml25.privacy.LaplaceFamily": Example(p.LaplaceFamily, {"l1_sensitivity": 1.0, "grid_bits": 20},
                                            positive=["l1_sensitivity"], allow={"grid_bits": "neg"}),
    "icml25.privacy.LaplaceFamily.epsilon": Example(lambda **kw: p.LaplaceFamily().epsilon(**kw), {"b": 2.0},
                                                    positive=["b"]),
    "icml25.privacy.LaplaceFamily.scale_for_epsilon": Example(
        lambda **kw: p.LaplaceFamily().scale_for_epsilon(**kw), {"epsilon": 0.5}, positive=["epsilon"]),
    **_family_examples(p.LaplaceFamily, "LaplaceFamily", 2.0, _X, np.array([0.1, -0.2, 0.3])),
    "icml25.privacy.PoissonFamily": Example(p.PoissonFamily, {"sensitivity": 1}, positive=["sensitivity"]),
    "icml25.privacy.PoissonFamily.delta": Example(lambda **kw: p.PoissonFamily().delta(**kw),
                                                  {"s": 5.0, "epsilon": 1.0}, positive=["s", "epsilon"]),
    **_family_examples(p.PoissonFamily, "PoissonFamily", 2.0, _COUNTS, np.array([1, 0, 2]), int_noise=True),
    # release engines
    "icml25.privacy.MultipleRelease": Example(p.MultipleRelease,
                                              lambda: {"x": _X.copy(), "family": p.GaussianFamily(), "seed": 0},
                                              allow=_ANY_SHAPE),
    "icml25.privacy.GaussianMultipleRelease": Example(p.GaussianMultipleRelease,
                                                      lambda: {"x": _X.copy(), "l2_sensitivity": 1.0, "seed": 0,
                                                               "grid_bits": 20},
                                                      positive=["l2_sensitivity"],
                                                      allow={**_ANY_SHAPE, "grid_bits": "neg"}),
    "icml25.privacy.GaussianMultipleRelease.release": Example(lambda **kw: _gauss().release(**kw), {"level": 0.7},
                                                              positive=["level"]),
    "icml25.privacy.GaussianMultipleRelease.subset_rho": Example(lambda **kw: _gauss().subset_rho(**kw),
                                                                 {"indices": [0, 1]}),
    "icml25.privacy.GaussianMultipleRelease.subset_privacy": Example(lambda **kw: _gauss().subset_privacy(**kw),
                                                                     {"indices": [0, 1]}),
    "icml25.privacy.LaplaceMultipleRelease": Example(p.LaplaceMultipleRelease,
                                                     lambda: {"x": _X.copy(), "l1_sensitivity": 1.0, "seed": 0,
                                                              "grid_bits": 20},
                                                     positive=["l1_sensitivity"],
                                                     allow={**_ANY_SHAPE, "grid_bits": "neg"}),
    "icml25.privacy.LaplaceMultipleRelease.release": Example(lambda **kw: _laplace().release(**kw),
                                                             {"epsilon": 0.7}, positive=["epsilon"]),
    "icml25.privacy.LaplaceMultipleRelease.subset_epsilon": Example(lambda **kw: _laplace().subset_epsilon(**kw),
                                                                    {"indices": [0, 1]}),
    "icml25.privacy.PoissonMultipleRelease": Example(p.PoissonMultipleRelease,
                                                     lambda: {"counts": _COUNTS.copy(), "sensitivity": 1, "seed": 0},
                                                     positive=["sensitivity"], allow=_ANY_SHAPE),
    "icml25.privacy.PoissonMultipleRelease.release": Example(lambda **kw: _poisson().release(**kw), {"lam": 3.0},
                                                             positive=["lam"]),
    "icml25.privacy.PoissonMultipleRelease.subset_delta": Example(lambda **kw: _poisson().subset_delta(**kw),
                                                                  {"indices": [0, 1], "epsilon": 1.0},
                                                                  positive=["epsilon"]),
    # sparse histograms
    "icml25.privacy.ZeroBinFilter": Example(p.ZeroBinFilter),
    "icml25.privacy.ZeroBinFilter.step": Example(lambda **kw: p.ZeroBinFilter().step(**kw), {"s": 4.0, "tau": 3.0},
                                                 positive=["s"]),
    "icml25.privacy.SparseHistogramGradualRelease": Example(
        p.SparseHistogramGradualRelease, lambda: {"counts": {3: 40, 17: 25}, "domain_size": 1000, "variant": "B",
                                                  "seed": 0}),
    "icml25.privacy.SparseHistogramGradualRelease.release": Example(
        lambda **kw: p.SparseHistogramGradualRelease({3: 40, 17: 25}, 1000, seed=0).release(**kw),
        {"sigma": 4.0, "threshold": 15.0}, positive=["sigma"]),
}

EXAMPLES.update({
    **{f"icml25.privacy.NoiseFamily.{name}": Exempt("abstract")
       for name in ("check_x", "sample", "forward", "backward", "bridge", "output")},
    "icml25.privacy.NoiseFamily.check_level": Example(lambda **kw: _Family().check_level(**kw), {"level": 0.5},
                                                      positive=["level"], labels={"level": "level (level)"}),
    "icml25.privacy.MultipleRelease.release": Example(
        lambda **kw: p.MultipleRelease(np.array([1.0, 2.0]), p.GaussianFamily(), seed=0).release(**kw),
        {"level": 0.5}, positive=("level",), labels={"level": "level (variance)"}),
})
