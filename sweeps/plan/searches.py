"""The search algorithms that propose each trial's configuration from a sweep's space (sweeps.plan.space).

- random: Ray Tune's BasicVariantGenerator over the space's Tune domains, seeded: the same seed samples the
  same trials.
- optuna: Optuna's TPE through Ray's OptunaSearch, which learns from finished trials (pip install optuna).

Adding a search is a name in SEARCHES and a branch in `build_search`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sweeps.plan.space import to_optuna, to_tune

if TYPE_CHECKING:
    from ray.tune.search import SearchAlgorithm, Searcher

SEARCHES = ("random", "optuna")


class SearchError(ValueError):
    """The search cannot run here; the message says what to install or change."""


def build_search(
    search: str, space: Mapping[str, Any], seed: int | None, metric: str, mode: str, max_concurrent: int | None = None
) -> tuple[Searcher | SearchAlgorithm, dict[str, Any]]:
    """The search algorithm and the param_space that goes with it, starting at most `max_concurrent` trials at
    once (a sweep on a shared cluster wraps it in its fair share instead: sweeps.trials.sharing).

    The search enforces the limit itself: Tune's `max_concurrent_trials` is ignored (with a warning) for a
    BasicVariantGenerator given to it, as ours must be to be seeded."""
    from ray.tune.search import BasicVariantGenerator, ConcurrencyLimiter

    if search == "optuna":
        try:
            import optuna
            from ray.tune.search.optuna import OptunaSearch
        except ImportError:
            raise SearchError(
                "--search optuna needs Optuna: pip install optuna (or the project's [optuna] extra)"
            ) from None
        sampler = optuna.samplers.TPESampler(seed=seed)
        searcher = OptunaSearch(space=to_optuna(space), sampler=sampler, metric=metric, mode=mode)
        return (ConcurrencyLimiter(searcher, max_concurrent) if max_concurrent else searcher), {}
    domains = tune_param_space(search, space, seed)
    return BasicVariantGenerator(random_state=seed, max_concurrent=max_concurrent or 0), domains


def tune_param_space(search: str, space: Mapping[str, Any], seed: int | None) -> dict[str, Any]:
    """The Tuner's param_space for the search: the space as Tune's domains for random search, none for Optuna
    (its searcher holds the space).

    A resumed sweep's Tuner must be given it again: Tune stores the space's functions (the hyperparameters that
    depend on others) as placeholders, and a trial that the search starts after the resume, as it does when it
    keeps to --max-concurrent-trials or a fair share, would get the placeholders as its values."""
    return {} if search == "optuna" else to_tune(space, seed)
