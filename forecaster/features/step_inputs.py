"""What each step of the net reads beside the value: the calendar of the data's frequency, the known-ahead covariates
of the point it is about to forecast, the historic covariates of the point it holds, and the series' static inputs.

As in Darts' RNNModel, the row of a window that holds point p carries what is known ahead of point p + 1 (its
calendar, its `futr_exog` values), so that the net knows which hour, which day, which promotion it is predicting,
also when it feeds its own forecasts back. The historic covariates (`hist_exog`, the shapes that read them: the direct
shape, as neuralforecast's) are those of point p itself, known only up to each forecast's origin: a forecast carries
the origin's values forward, so that nothing after the origin leaks into it.

With `seasonal_lag` (the recurrent shape's), the row that holds point p also carries the value of point p + 1 - L,
the same place a season of L points before the point it is about to forecast (the week of hourly data), in the
window's units: a forecast of more than L points reads the same place a season further back, the last it knows.
forecaster/features/transforms.py fills it in, from the values the net reads.

The calendar: below a day, the hour of the day and the day of the week; daily, the day of the week and the day of the
year; weekly, the week of the year; each as the sine and cosine of where the time falls in its period (the year
being 365.2425 days, so that a week 53 or a 29 February takes its own place rather than week 1's or 1 March's).
Monthly, quarterly, business-daily data and a plain time index: the place in the season (the month of the year).

How the covariates are scaled, fit on the training parts: a 0/1 column (a holiday flag, a promotion) as it is, the
same for every series; any other column less its mean, divided by its standard deviation, either each series' own
over its training part (`covariate_scaling="series"`, as the target's scaler is: a price against the series' usual
price) or one pair over every series' training parts (`"shared"`: a temperature, whose degrees mean the same in every
series); numeric statics standardised over the series, categories as 0/1 columns (one per category: the first
layer's weights on them are the category's embedding). docs/design-notes.md, "Covariates and the calendar", measures
the two rules.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable
from typing import Any, ClassVar, cast

import numpy as np
import pandas as pd

from forecaster.data.panel import Panel

DAY_NS = 86_400 * 10**9
WEEK_NS = 7 * DAY_NS
YEAR_NS = 31_556_952 * 10**9
"""365.2425 days, the Gregorian calendar's mean year."""


def calendar_periods(freq: str | None) -> tuple[int, ...]:
    """The periods (in ns) of the calendar inputs of a fixed-step frequency finer than a month: (day, week) below a
    day, (week, year) daily, (year,) weekly; () where the calendar is the place in the season instead."""
    step = step_ns(freq)
    if step is None:
        return ()
    if step < DAY_NS:
        return (DAY_NS, WEEK_NS)
    if step < WEEK_NS:
        return (WEEK_NS, YEAR_NS)
    return (YEAR_NS,) if step < YEAR_NS // 6 else ()


def step_ns(freq: str | None) -> int | None:
    """The fixed step of a frequency in ns (weeks included), or None where it has none (months, business days)."""
    if freq is None:
        return None
    offset = pd.tseries.frequencies.to_offset(freq)
    if offset.rule_code.split("-")[0].upper() == "W":
        return int(offset.n) * WEEK_NS
    try:
        step = int(pd.Timedelta(offset).value)  # type: ignore[arg-type]  # a Tick converts; others raise
    except ValueError:
        return None
    return step if step > 0 else None


@dataclasses.dataclass(frozen=True)
class StepLayout:
    """Where each input of a step lies in its row of features, by name: the one place that knows their order. A row is
    the value, the calendar of the point after it, the known-ahead covariates of the point after it, the historic ones
    of its own point, the statics, its own point's known-ahead values (covariate_path linear), the value a season
    back, and the padding's mask (a padded shape's last input)."""

    calendar: range
    known_ahead: range
    historic: range
    static: range
    own_known: range
    season_back: range
    mask: range

    value: ClassVar[range] = range(0, 1)

    @property
    def width(self) -> int:
        """The features of a row."""
        return self.mask.stop

    @property
    def covariates(self) -> range:
        """The known-ahead and historic covariates, side by side."""
        return range(self.known_ahead.start, self.historic.stop)


@dataclasses.dataclass(frozen=True, eq=False)
class StepInputs:
    """What every step reads beside the value (the module's docstring), with the covariates' scaling fit on the
    training part: one row per series, as the target's scaler."""

    calendar: bool
    season: int
    periods: tuple[int, ...] = ()
    """The calendar's periods in ns (calendar_periods); () for the place in the season."""
    futr_names: tuple[str, ...] = ()
    hist_names: tuple[str, ...] = ()
    static_names: tuple[str, ...] = ()
    center: np.ndarray | None = None
    """(S, F + G): what each known-ahead, then historic, column has subtracted, per series."""
    scale: np.ndarray | None = None
    """(S, F + G): what it is then divided by."""
    static: np.ndarray | None = None
    """(S, K): each series' static inputs, scaled."""
    shared: bool = False
    """Whether `center` and `scale` are one pair over every series (covariate_scaling="shared"), which a series the
    model never trained on then takes too."""
    own_known: bool = False
    """Each row also reads the known-ahead values of the point it holds, after the statics (covariate_path linear: what
    the linear term takes out of the value the net reads)."""
    seasonal_lag: int = 0
    """L: each row also reads the value L points before the point after it (ForecasterConfig.seasonal_lag), its last
    feature; 0: none."""

    # --- shape --------------------------------------------------------------------------------------------------
    @property
    def calendar_count(self) -> int:
        return 2 * max(len(self.periods), 1) if self.calendar else 0

    @property
    def covariate_count(self) -> int:
        return len(self.futr_names) + len(self.hist_names)

    @property
    def count(self) -> int:
        """The features beside the value: the calendar's, the known-ahead and historic columns', the statics', and
        the value a season back."""
        return self.layout().width - 1

    def layout(self, padded: bool = False) -> StepLayout:
        """Where each input lies in a row of these features (`padded`: the row ends with the padding's mask)."""
        sizes = (
            self.calendar_count,
            len(self.futr_names),
            len(self.hist_names),
            len(self.static_names),
            len(self.futr_names) if self.own_known else 0,
            1 if self.seasonal_lag else 0,
            1 if padded else 0,
        )
        stops = np.cumsum((1, *sizes)).tolist()
        calendar, known_ahead, historic, static, own_known, season_back, mask = (
            range(start, stop) for start, stop in itertools.pairwise(stops)
        )
        return StepLayout(calendar, known_ahead, historic, static, own_known, season_back, mask)

    @property
    def names(self) -> list[str]:
        """Every covariate the net reads, as the data names them: what a forecast must be given."""
        return [*self.futr_names, *self.hist_names]

    # --- fitting ------------------------------------------------------------------------------------------------
    @classmethod
    def fit(
        cls,
        calendar: bool,
        train: Panel,
        reads_hist: bool,
        shared: bool = False,
        seasonal_lag: int = 0,
        own_known: bool = False,
    ) -> StepInputs:
        """The inputs of `train`'s data, the covariates scaled on its points: each series' training part, or with
        `shared` all of them together; with `seasonal_lag`, the value that many points back too; with `own_known`,
        each point's own known-ahead values too."""
        periods = calendar_periods(train.freq) if calendar and train.dated else ()
        covariates = train.covariates
        if covariates is None:
            return cls(calendar, train.season, periods, seasonal_lag=seasonal_lag)
        hist_names = covariates.hist_names if reads_hist else ()
        columns = _columns(covariates, covariates.futr_names, hist_names)
        values = covariates.table[_table_rows(train, np.arange(len(train.values)))][:, columns]
        starts = train.offsets[:-1]
        counts = np.maximum(train.lengths, 1)[:, None]
        if shared:
            mean = np.repeat(values.mean(0, keepdims=True), len(train), axis=0) if len(values) else values[:0]
            spread = np.repeat(values.std(0, keepdims=True), len(train), axis=0) if len(values) else mean
        else:
            mean = np.add.reduceat(values, starts, axis=0) / counts if len(values) else np.zeros((len(train), 0))
            deviation = np.repeat(mean, train.lengths, axis=0) - values
            spread = np.sqrt(np.add.reduceat(deviation**2, starts, axis=0) / counts) if len(values) else mean
        block = covariates.table[:, columns]  # a historic column is NaN after the data's end
        binary = (np.isin(block, (0.0, 1.0)) | np.isnan(block)).all(axis=0)
        center = np.where(binary, 0.0, mean)
        scale = np.where(binary | (spread == 0), 1.0, spread)
        static = None
        if covariates.static is not None and covariates.static_count:
            static = covariates.static.astype(np.float64)
            numeric = np.isin(covariates.static_names, covariates.static_columns)
            level, width = static.mean(0), static.std(0)
            static = np.where(numeric, (static - level) / np.where(width == 0, 1.0, width), static)
        return cls(
            calendar,
            train.season,
            periods,
            covariates.futr_names,
            hist_names,
            covariates.static_names if static is not None else (),
            center,
            scale,
            static,
            shared,
            own_known,
            seasonal_lag,
        )

    def rows(self, rows: np.ndarray) -> StepInputs:
        """The inputs of the series at `rows`, in that order."""
        pick: Callable[[np.ndarray | None], np.ndarray | None] = lambda array: (  # noqa: E731
            None if array is None else array[rows]
        )
        return dataclasses.replace(self, center=pick(self.center), scale=pick(self.scale), static=pick(self.static))

    def merged(self, rows: np.ndarray, fresh: StepInputs, new: np.ndarray) -> StepInputs:
        """One row per series: this one's at `rows` where `new` is false, `fresh`'s (fit on the new series) where
        true."""

        def merge(mine: np.ndarray | None, theirs: np.ndarray | None) -> np.ndarray | None:
            if mine is None:
                return None
            merged = np.zeros((len(rows), *mine.shape[1:]))
            merged[~new] = mine[rows[~new]]
            if theirs is not None:
                merged[new] = theirs
            return merged

        def trained(mine: np.ndarray | None, theirs: np.ndarray | None) -> np.ndarray | None:
            """Shared scaling: a new series takes the pair the model trained with."""
            return mine[:1].repeat(int(new.sum()), axis=0) if self.shared and mine is not None and len(mine) else theirs

        return dataclasses.replace(
            self,
            center=merge(self.center, trained(self.center, fresh.center)),
            scale=merge(self.scale, trained(self.scale, fresh.scale)),
            static=merge(self.static, fresh.static),
        )

    # --- a checkpoint's plain values ----------------------------------------------------------------------------
    def state(self) -> dict[str, Any] | None:
        """What a checkpoint stores (to_plain), or None where a step reads at most the place in the season, as a
        checkpoint made before covariates did."""
        return self.to_plain() if self.periods or self.count > self.calendar_count else None

    def to_plain(self) -> dict[str, Any]:
        plain: Callable[[np.ndarray | None], object] = lambda array: (  # noqa: E731
            None if array is None else np.asarray(array, dtype=np.float64).tolist()
        )
        return {
            "periods": list(self.periods),
            "futr_names": list(self.futr_names),
            "hist_names": list(self.hist_names),
            "static_names": list(self.static_names),
            "center": plain(self.center),
            "scale": plain(self.scale),
            "static": plain(self.static),
            "shared": self.shared,
            "own_known": self.own_known,
            "seasonal_lag": self.seasonal_lag,
        }

    @classmethod
    def from_plain(cls, calendar: bool, season: int, plain: dict[str, Any] | None) -> StepInputs:
        """What `to_plain` stored (None: a checkpoint without covariates, whose calendar is the season's place)."""
        if plain is None:
            return cls(calendar, season)
        array: Callable[[list[Any] | None], np.ndarray | None] = lambda values: (  # noqa: E731
            None if values is None else np.asarray(values, dtype=np.float64)
        )
        return cls(
            calendar,
            season,
            tuple(int(period) for period in plain["periods"]),
            tuple(plain["futr_names"]),
            tuple(plain["hist_names"]),
            tuple(plain["static_names"]),
            array(plain["center"]),
            array(plain["scale"]),
            array(plain["static"]),
            bool(plain.get("shared", False)),
            bool(plain.get("own_known", False)),
            int(plain.get("seasonal_lag", 0)),
        )

    # --- the features of points ---------------------------------------------------------------------------------
    def calendar_of_next(self, panel: Panel, series: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """(..., calendar_count): the calendar of the point after the one at `positions` (within its series, of
        `series`, broadcast together; past a series' end too)."""
        after = np.asarray(positions) + 1
        if not self.periods:
            return calendar_features(panel.phases()[series] + after, self.season)
        first = panel.first_times().astype("datetime64[ns]").astype(np.int64)[series]
        times = first + after * (step_ns(panel.freq) or 0)  # periods imply a fixed step
        return time_features(times, self.periods)

    def covariates_of(
        self, panel: Panel, series: np.ndarray, positions: np.ndarray, origins: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """(..., F + G + K (+ F)) scaled: the known-ahead values of the point after `positions`, the historic values
        of the point at `positions` (at most the forecast's origin, `origins`, carried forward past it), the statics,
        and with `own_known` the known-ahead values of the point at `positions` (0 before the series' start). `series`
        index `panel`'s series, `rows` the inputs' row of each (broadcast with `positions`)."""
        covariates = panel.covariates
        parts = []
        if self.covariate_count:
            if covariates is None:
                raise ValueError(f"the model reads the covariates {', '.join(self.names)}, and the data has none")
            futr = _columns(covariates, self.futr_names, ())
            hist = _columns(covariates, (), self.hist_names)
            starts, stops = covariates.starts[series], covariates.stops[series]
            ahead = starts + np.asarray(positions) + 1
            known = ahead < stops
            futr_values = covariates.table[np.where(known, ahead, starts), :][..., futr] * known[..., None]
            held = starts + np.minimum(positions, origins)
            hist_values = covariates.table[held][..., hist]
            values = np.concatenate([futr_values, hist_values], axis=-1)
            parts.append((values - self.center[rows]) / self.scale[rows])  # type: ignore[index]  # fit with columns
        if self.static is not None:
            parts.append(np.broadcast_to(self.static[rows], (*np.shape(positions), self.static.shape[1])))
        if self.own_known and self.futr_names:
            assert covariates is not None and self.center is not None and self.scale is not None
            starts, stops = covariates.starts[series], covariates.stops[series]
            held = starts + np.asarray(positions)
            inside = (held >= starts) & (held < stops)
            values = covariates.table[np.where(inside, held, starts), :][..., futr] * inside[..., None]
            count = len(self.futr_names)
            parts.append((values - self.center[rows][..., :count]) / self.scale[rows][..., :count])
        if not parts:
            return np.zeros((*np.shape(positions), 0))
        return np.concatenate(parts, axis=-1)

    def check_known_ahead(self, panel: Panel, series: np.ndarray, origins: np.ndarray, steps: int) -> None:
        """Refuse forecasts of `steps` points after `origins` (positions within `series` of `panel`) where the
        known-ahead values stop sooner: each forecast reads those of every point it forecasts."""
        if not self.futr_names:
            return
        if panel.covariates is None or not set(self.futr_names) <= set(panel.covariates.futr_names):
            given = () if panel.covariates is None else panel.covariates.futr_names
            missing = [name for name in self.futr_names if name not in given]
            raise ValueError(
                f"the model reads the known-ahead covariates {', '.join(self.futr_names)}; the data lacks "
                f"{', '.join(missing)}: name them with --futr-exog and give their future with --futr-data"
            )
        covariates = panel.covariates
        known = covariates.stops[series] - covariates.starts[series] - np.asarray(origins) - 1
        short = np.unique(np.asarray(series)[known < steps])
        if len(short):
            raise ValueError(
                f"a forecast of {steps} points reads the known-ahead covariates {', '.join(self.futr_names)} of every "
                f"point it forecasts, and series {panel.id_list(panel.ids[short])} have fewer after the forecast's "
                f"start: give them for the {steps} points after the end with --futr-data"
            )


def _columns(covariates: Any, futr: tuple[str, ...], hist: tuple[str, ...]) -> list[int]:
    """The table's columns of these known-ahead and historic covariates, in that order."""
    missing = [name for name in futr if name not in covariates.futr_names] + [
        name for name in hist if name not in covariates.hist_names
    ]
    if missing:
        raise ValueError(f"the model reads the covariates {', '.join(missing)}, which the data does not have")
    return [covariates.futr_names.index(name) for name in futr] + [
        covariates.futr_count + covariates.hist_names.index(name) for name in hist
    ]


def _table_rows(panel: Panel, rows: np.ndarray) -> np.ndarray:
    """The covariate table's row of each of the panel's rows."""
    series = np.searchsorted(panel.offsets, rows, side="right") - 1
    return cast(np.ndarray, panel.covariates.starts[series] + rows - panel.offsets[series])  # type: ignore[union-attr]


def calendar_features(positions: np.ndarray, season: int) -> np.ndarray:
    """(..., 2): sin and cos of each position's place in the season."""
    angle = 2 * math.pi * (np.asarray(positions) % season) / season
    return np.stack([np.sin(angle), np.cos(angle)], axis=-1)


def time_features(times: np.ndarray, periods: tuple[int, ...]) -> np.ndarray:
    """(..., 2 * len(periods)): for each period, sin and cos of where each time (int64 ns) falls in it."""
    parts = []
    for period in periods:
        angle = 2 * math.pi * (np.mod(times, period) / period)
        parts.extend([np.sin(angle), np.cos(angle)])
    return np.stack(parts, axis=-1)
