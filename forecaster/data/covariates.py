"""Covariates beside a panel's values, by Nixtla's names: known ahead (`futr_exog`, e.g. a promotion or a holiday),
known only up to each point (`hist_exog`, e.g. the temperature measured), and static per series (`static`, e.g. the
store or the region).

They live in one table of their own, series after series like the panel's values, each series' block running from its
first point to the last point whose known-ahead values are known: the points of the data, then the future's
(`--futr-data`), where the historic columns are NaN. A panel part (a training part, a validation part) points into the
same table with `starts`, so that a training part still sees the known-ahead values of the points after it, as the
points it forecasts need, and no part copies the table.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class Covariates:
    """The covariates of a panel's series (forecaster/data/panel.py, `Panel.covariates`)."""

    futr_names: tuple[str, ...]
    """The known-ahead columns, in the table's first len(futr_names) columns."""
    hist_names: tuple[str, ...]
    """The historic columns, after them."""
    table: np.ndarray
    """(M, F + G) float64: every series' block, back to back; the historic columns NaN after the data's end."""
    starts: np.ndarray
    """(S,) int64: the table row of each series' first point of the panel that holds these covariates."""
    stops: np.ndarray
    """(S,) int64: the end (exclusive) of each series' block: the row after its last known-ahead point."""
    static_names: tuple[str, ...] = ()
    """The static inputs: numeric columns by their names, each category of a categorical column as `column=value`."""
    static: np.ndarray | None = None
    """(S, K) float64, one row per series: the numbers as given, each category as 0/1 (one-hot: the first linear layer
    makes it an embedding of the category)."""
    static_columns: tuple[str, ...] = ()
    """The static file's columns, as given (before categories are spread over columns), for messages and the plan."""

    @property
    def futr_count(self) -> int:
        return len(self.futr_names)

    @property
    def hist_count(self) -> int:
        return len(self.hist_names)

    @property
    def static_count(self) -> int:
        return len(self.static_names)

    def futr(self) -> np.ndarray:
        """(M, F) the known-ahead columns of the whole table."""
        return self.table[:, : self.futr_count]

    def hist(self) -> np.ndarray:
        """(M, G) the historic columns of the whole table."""
        return self.table[:, self.futr_count :]

    def known_after(self, lengths: np.ndarray) -> np.ndarray:
        """(S,) how many points after the end of each series (of `lengths`) have known-ahead values in the table."""
        known: np.ndarray = self.stops - self.starts - np.asarray(lengths)
        return known

    def take(self, keep: np.ndarray) -> Covariates:
        """The covariates of the series where `keep` (a boolean mask over series) is true (the table is shared)."""
        keep = np.asarray(keep, dtype=bool)
        return dataclasses.replace(
            self,
            starts=self.starts[keep],
            stops=self.stops[keep],
            static=None if self.static is None else self.static[keep],
        )

    def after(self, head_lengths: np.ndarray) -> Covariates:
        """The covariates of the points after each series' first head_lengths[i] (a panel's tail part)."""
        return dataclasses.replace(self, starts=self.starts + np.asarray(head_lengths, dtype=np.int64))
