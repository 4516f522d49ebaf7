"""The parts of a fit, every series checked: each series' training part, the validation part after it and the test
window no fit sees, cut the same way for every series, with every check that a configuration needs of the data (long
enough for its windows, values its transforms are defined on, a ranking metric defined on every series) made before
anything trains, each error naming the series and what to change.

Cutting and checking are two steps, so that a sweep cuts its data once and checks each configuration of its space
on that one cut: `cut_parts` cuts a panel (`Cut`: by a number of points or by dates) and checks what no configuration
changes; `check_parts` checks what one configuration needs of the parts. `fit_parts` is both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from forecaster.data.panel import Panel
from forecaster.data.read import SeriesError
from forecaster.metrics import METRICS, mase_scales
from forecaster.shapes import shape_of

if TYPE_CHECKING:
    from forecaster.config import ForecasterConfig


@dataclasses.dataclass(frozen=True)
class Cut:
    """How every series is cut: its test window first (its last `test_size` points, or its points after `test_after`;
    no fit sees them), then its validation part, the last `val_size` points of what is left, or its points after
    `split_after` (a date, or a time of a plain index)."""

    val_size: int | None = None
    split_after: str | int | None = None
    test_size: int = 0
    test_after: str | int | None = None
    windows: int = 1
    """The backtest windows the validation part is cut into, each `val_size / windows` points, earliest first: each
    forecast from the points before it, as neuralforecast's and statsforecast's cross_validation forecast theirs."""

    @classmethod
    def last(cls, horizon: int, windows: int = 1) -> Cut:
        """Each series' last `horizon` points held out, the `windows` horizons before them validating, one backtest
        window each."""
        return cls(val_size=windows * horizon, test_size=horizon, windows=windows)

    @property
    def has_test(self) -> bool:
        return self.test_after is not None or self.test_size > 0


def no_cut_message(label: str, dated: bool, test_option: bool = False) -> str:
    """What a command line says to data that comes with no cut of its own (no official hold-out, not Air Passengers):
    the options that cut it. `test_option`: the command takes --test-after too."""
    when = "DATE" if dated else "TIME (a time of its plain index)"
    test = " and --test-after DATE (the points after it held out)" if test_option and dated else ""
    return (
        f"{label} comes with no horizon or split: give --horizon H (each series' last H points held out, the H before "
        f"them validating) or --split-after {when} (the points after it validating){test}"
    )


@dataclasses.dataclass(frozen=True)
class FitParts:
    """What a fit trains and validates on: every series' training part and the validation part after it."""

    train: Panel
    val: Panel
    seen: Panel
    """Both together: each series' training part followed by its validation part."""
    metric: str
    """The metric that ranks the fit's epochs (and a sweep's trials)."""
    test: Panel | None = None
    """Each series' test window (None without one): no fit sees it; a sweep's answer is scored on it."""
    untrained: tuple[str, ...] = ()
    """Series of a panel too short for one of the recurrent shape's training windows, but holding its input chunk:
    validated and forecast from what they hold, by a model the other series train."""
    cut: Cut = Cut()
    """How the series were cut."""

    @property
    def dropped(self) -> tuple[str, ...]:
        return self.train.dropped

    @property
    def lengths(self) -> np.ndarray:
        """(S,) each series' whole length, its test window included."""
        return self.seen.lengths + (0 if self.test is None else self.test.lengths)

    def __reduce__(
        self,
    ) -> tuple[Callable[..., FitParts], tuple[Panel, np.ndarray, str, Panel | None, tuple[str, ...], Cut]]:
        """Pickled (into Ray's object store, for a sweep's trials) as the seen parts and where each series splits: the
        training and validation parts are rebuilt from them on load, not sent twice, and not checked again."""
        return _from_seen, (self.seen, self.train.lengths, self.metric, self.test, self.untrained, self.cut)

    @property
    def windows(self) -> int:
        """How many backtest windows the validation part is cut into (Cut.windows)."""
        return self.cut.windows

    @property
    def window_size(self) -> int:
        """The points each validation forecast scores: a backtest window's, or without windows the validation part's
        (that of the longest series)."""
        return int(self.val.lengths.max()) // self.windows

    @property
    def weighing_windows(self) -> int:
        """How many of the latest backtest windows the answer's ensemble is weighed on, which no trial ranks on: half
        of them, rounded down. A trial's best epoch and its rank are chosen on its scores, which flatters them where
        they were chosen, so its net is compared with the baselines (never chosen on any window) on windows it was not
        chosen on. With one window both read it (a panel's many series make that flattery small)."""
        return self.windows // 2

    @property
    def ranking_windows(self) -> int:
        """How many of the earliest backtest windows the trials rank on (all of them with one window)."""
        return max(self.windows - self.weighing_windows, 1)

    def weighing_part(self) -> tuple[Panel, np.ndarray]:
        """The validation points the ensemble is weighed on (`weighing_windows`; the whole part with one window) and
        where they lie in the validation part: (their panel, a boolean mask of the part's rows)."""
        if self.windows == 1:
            return self.val, np.ones(len(self.val.values), dtype=bool)
        ranked = self.val.lengths // self.windows * self.ranking_windows
        weighed = self.val.split_at(ranked)[1]
        return weighed, self.val.positions >= np.repeat(ranked, self.val.lengths)

    def backtest_windows(self) -> list[tuple[Panel, Panel]]:
        """(history, window) of each backtest window of the validation part, earliest first: its points, and every
        point of each series before them. One window: (the training part, the validation part)."""
        if self.windows == 1:
            return [(self.train, self.val)]
        size = self.val.lengths // self.windows
        found = []
        for window in range(self.windows):
            history, after = self.seen.split_at(self.train.lengths + window * size)
            found.append((history, after.split_at(size)[0]))
        return found

    def backtest(self, forecast: Callable[[Panel, Panel], np.ndarray]) -> np.ndarray:
        """Every point of the validation part forecast window by window (`backtest_windows`): `forecast(history,
        window)` gives a window's points, flat in its order; the result is flat in the validation part's order."""
        found = np.empty(len(self.val.values))
        row_window = (
            self.val.positions
            // (self.val.lengths // self.windows)[np.repeat(np.arange(len(self.val)), self.val.lengths)]
        )
        for window, (history, part) in enumerate(self.backtest_windows()):
            found[row_window == window] = forecast(history, part)
        return found

    def without_test(self) -> FitParts:
        """What a fit may be given: everything but the test windows."""
        return dataclasses.replace(self, test=None)

    def without(self, dropped: Iterable[str]) -> FitParts:
        """The parts without the series whose ids are in `dropped`, their ids kept in `.dropped` (after any dropped
        before)."""
        keep = ~np.isin(self.train.ids, list(dropped))
        if keep.all():
            return self
        ids = (*self.dropped, *map(str, self.train.ids[~keep]))

        def part(panel: Any) -> Any:  # Panel, or the test part's None
            return None if panel is None else dataclasses.replace(panel.take(keep), dropped=ids)

        gone = set(ids)
        untrained = tuple(series for series in self.untrained if series not in gone)
        return dataclasses.replace(
            self,
            train=part(self.train),
            val=part(self.val),
            seen=part(self.seen),
            test=part(self.test),
            untrained=untrained,
        )


def _from_seen(
    seen: Panel, train_lengths: np.ndarray, metric: str, test: Panel | None, untrained: tuple[str, ...], cut: Cut
) -> FitParts:
    train, val = seen.split_at(train_lengths)
    return FitParts(train, val, seen, metric, test, untrained, cut)


def default_metric(panel: Panel) -> str:
    """MAPE for one series, as always; sMAPE, the M-competitions' metric, for a panel (defined where MAPE is not);
    MASE for data with a value below 0 (profits, flows, anomalies), where both divide by values near 0 and mean
    little."""
    if (panel.values < 0).any():
        return "mase"
    return "mape" if len(panel) == 1 else "smape"


FIT_PARTS_FIELDS = ("shape", "input_chunk_length", "target_transform", "window_norm", "calendar", "val_origins")
"""The shared fields of a configuration that `check_parts` reads: two configurations equal on these and on their
shape's settings are checked alike (a sweep checks every corner of its space once per distinct value of them)."""


def fit_parts(
    config: ForecasterConfig,
    panel: Panel,
    *,
    split_after: str | int | None = None,
    val_size: int | None = None,
    test_size: int = 0,
    test_after: str | int | None = None,
    metric: str | None = None,
    drop_short: bool = False,
) -> FitParts:
    """Cut every series as `Cut` says and check it for a fit of `config` (`cut_parts`, then `check_parts`)."""
    cut = Cut(val_size=val_size, split_after=split_after, test_size=test_size, test_after=test_after)
    return check_parts(config, cut_parts(panel, cut, metric), drop_short=drop_short)


def cut_parts(panel: Panel, cut: Cut, metric: str | None = None) -> FitParts:
    """Every series cut as `cut` says, with the checks no configuration changes: the cut inside the series, a single
    series' test window long enough to judge a forecast. The metric (default: `default_metric`) is checked by
    `check_parts`, on the series a configuration keeps. A series too short for the cut keeps what it has (an empty
    part); `check_parts` refuses or drops it."""
    metric = metric or default_metric(panel)
    if metric not in METRICS:
        raise SeriesError(f"metric={metric!r} is not one of {', '.join(METRICS)}")
    if cut.val_size is None and cut.split_after is None:
        raise SeriesError(
            "say where each series' validation part starts: val_size=H (its last H points before the test window) "
            "or split_after=DATE (the points after it)"
        )
    for name, size, minimum in (("val_size", cut.val_size, 1), ("test_size", cut.test_size, 0)):
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < minimum):
            raise SeriesError(f"{name}={size!r} must be a whole number of points, at least {minimum}")
    if isinstance(cut.windows, bool) or not isinstance(cut.windows, (int, np.integer)) or cut.windows < 1:
        raise SeriesError(f"windows={cut.windows!r} must be a whole number of backtest windows, at least 1")
    if cut.windows > 1 and (cut.val_size is None or cut.val_size % cut.windows):
        raise SeriesError(
            f"windows={cut.windows} cuts the validation part into windows of a horizon each: give the horizon "
            "(--horizon H; val_size=windows * H), not a date"
        )
    if cut.test_after is not None:
        seen_lengths = _cut_test_after(panel, cut.test_after)
    else:
        seen_lengths = panel.lengths - cut.test_size
    if cut.val_size is not None:
        train_lengths = seen_lengths - cut.val_size
    else:
        train_lengths = np.minimum(
            panel.points_up_to(_cut_time(panel, cast("str | int", cut.split_after))), seen_lengths
        )
        _check_cut_inside(panel, cut.split_after, train_lengths, seen_lengths)
    seen_lengths = np.clip(seen_lengths, 0, panel.lengths)
    seen, test = panel.split_at(seen_lengths)
    train, val = seen.split_at(np.clip(train_lengths, 0, seen_lengths))
    return FitParts(train, val, seen, metric, test if cut.has_test else None, cut=cut)


def check_parts(config: ForecasterConfig, parts: FitParts, drop_short: bool = False) -> FitParts:
    """Check the parts for a fit of `config` and return them as it would train on them.

    Series too short for a training window, the validation part and the test window are refused, naming them, or
    dropped with `drop_short` (their ids in `.dropped`); in a panel, a series too short for the recurrent shape's
    window but holding its input chunk is kept, forecast without training on it (`.untrained`), where another trains.
    Refused too: seasonal options on data without a season, a log (or window division) of values at or below 0, and
    the ranking metric where a series makes it undefined (on its validation part, and on its test window, which is
    scored by every metric).
    """
    cut, seen = parts.cut, parts.seen
    lengths = parts.lengths
    _check_season(config, seen)
    if cut.windows > 1 and config.val_origins > 1:
        raise SeriesError(
            f"val_origins={config.val_origins} and {cut.windows} backtest windows both set where the validation "
            "forecasts start: keep val_origins=1 with backtest windows"
        )
    if cut.val_size is not None and config.val_origins > cut.val_size:
        raise SeriesError(
            f"val_origins={config.val_origins} is more than the {cut.val_size} points of the validation part: each "
            "origin is a point of it; lower val_origins"
        )
    train_lengths, val_lengths = parts.train.lengths, parts.val.lengths
    tested = (
        parts.test.lengths > 0
        if parts.test is not None and cut.test_after is not None
        else np.ones(len(seen), dtype=bool)
    )
    reads_only = _reads_only(config, seen, train_lengths, val_lengths, tested)
    short = _too_short(config, seen, train_lengths, val_lengths, reads_only) | ~tested
    if short.any() and drop_short and len(seen) > 1:
        if short.all():
            needed = _length_needed(config, _lag(config, seen.season), cut)
            raise SeriesError(f"{seen.label}: every one of its {len(seen)} series is too short for this fit; {needed}")
        parts = parts.without(seen.ids[short])
        seen, short = parts.seen, short[~short]
    _check_values(config, seen.take(~short) if len(seen) > 1 else seen)  # a dropped series' values do not matter
    if short.any():
        _refuse_untested(seen, tested, cut.test_after)
        _refuse_short(config, seen, lengths, short, parts.train.lengths, parts.val.lengths, cut, reads_only)
    train, val = parts.train, parts.val
    _check_metric(parts.metric, train, val)
    if cut.has_test and parts.metric == "mape" and parts.test is not None:
        _check_test_mape(parts.test, cut.test_after)
    untrained = train.ids[train.lengths < _window_points(config) + _lag(config, seen.season)]
    return dataclasses.replace(parts, untrained=tuple(map(str, untrained)))


def _cut_test_after(panel: Panel, test_after: str | int) -> np.ndarray:
    """(S,) how many points of each series lie at or before `test_after`; a single series' window is checked as
    the sweep's test window always was: inside the series, and at least a season long (two points without one)."""
    seen_lengths = panel.points_up_to(_cut_time(panel, test_after, "test_after"))
    if len(panel) > 1:
        return seen_lengths
    unit = "date" if panel.dated else "time"
    if seen_lengths[0] == panel.lengths[0]:
        last = panel.describe_time(panel.last_times()[0])
        raise SeriesError(f"test_after={test_after} is at or after the last {unit} ({last}): the test window is empty")
    if seen_lengths[0] == 0:
        first = panel.describe_time(panel.first_times()[0])
        raise SeriesError(f"test_after={test_after} is before the first {unit} ({first}): nothing is left to train on")
    needed, tested = max(panel.season, 2), int(panel.lengths[0] - seen_lengths[0])
    if tested < needed:
        raise SeriesError(
            f"test_after={test_after} leaves {tested} test point(s) after it; a test window needs at least "
            f"{needed} (a whole season of this series) to say how the forecast holds: move test_after earlier"
        )
    return seen_lengths


def _refuse_untested(panel: Panel, tested: np.ndarray, test_after: str | int | None) -> None:
    """In a panel cut at test_after, the series that end at or before it: nothing of theirs can be scored."""
    if tested.all():
        return
    last = panel.describe_time(panel.last_times()[~tested].max())
    raise SeriesError(
        f"{panel.label}: {(~tested).sum()} of {len(panel)} series end at or before test_after={test_after} (the "
        f"latest at {last}), leaving no test window: {panel.id_list(panel.ids[~tested])}; drop them with "
        "--drop-short-series (drop_short=True), or move test_after earlier"
    )


def _check_test_mape(test: Panel, test_after: str | int | None) -> None:
    """The answer is scored by MAPE on the test window: no zeros there."""
    zero = np.flatnonzero(test.values == 0)
    if not len(zero):
        return
    if len(test) == 1:
        where, move = (f"after {test_after} ", "test_after") if test_after is not None else ("", "the horizon")
        first = test.describe_time(test.times[zero[0]])
        raise SeriesError(
            f"the test window {where}has {len(zero)} zero value(s) (first at {first}), where MAPE is undefined; "
            f"move {move}, or shift the series away from 0"
        )
    series = np.unique(np.searchsorted(test.offsets, zero, side="right") - 1)
    raise SeriesError(
        f"{test.label}: MAPE is undefined on {len(series)} series with zeros in their test window: "
        f"{test.id_list(test.ids[series])}; rank by metric='smape' or 'mase' (--metric), which are defined there"
    )


def _lag(config: ForecasterConfig, season: int) -> int:
    """Points the target transform's differences take from the start of every series."""
    transform = config.target_transform
    return season if transform.endswith("seasonal_diff") else 1 if transform.endswith("diff") else 0


def _check_season(config: ForecasterConfig, panel: Panel) -> None:
    transform = config.target_transform
    if (transform.endswith("seasonal_diff") or config.calendar) and panel.season == 1:
        option = f"target_transform={transform!r}" if transform.endswith("seasonal_diff") else "calendar=True"
        kind = f"a {panel.freq!r} series" if panel.dated else "a plain time index with season length 1"
        raise SeriesError(
            f"{option} needs a series with a season, and {kind} has none here; "
            "use another target_transform, or calendar=False"
        )


def _cut_time(panel: Panel, when: str | int, option: str = "split_after") -> np.datetime64 | int:
    if panel.dated:
        return np.datetime64(_timestamp(when, option).tz_localize(None), "ns")
    try:
        return int(when)
    except (TypeError, ValueError):
        raise SeriesError(
            f"{option}={when!r} is not a time of this panel's plain integer index; give an integer, or a size in "
            "points (val_size and test_size, --horizon)"
        ) from None


def _check_cut_inside(
    panel: Panel, split_after: str | int | None, train_lengths: np.ndarray, seen_lengths: np.ndarray
) -> None:
    """split_after before every series' start, or after every series' end: the message of a single series' split."""
    if not (train_lengths == 0).all() and not (train_lengths == seen_lengths).all():
        return
    unit = "date" if panel.dated else "time"
    if (train_lengths == 0).all():
        first = panel.describe_time(panel.first_times().min())
        raise SeriesError(f"split_after={split_after} is before the first {unit} ({first}): the training part is empty")
    ends = panel.times[panel.offsets[:-1] + seen_lengths - 1]
    last = panel.describe_time(ends.max())
    raise SeriesError(
        f"split_after={split_after} is at or after the last {unit} ({last}): nothing is left to validate on"
    )


def _reads_only(
    config: ForecasterConfig, panel: Panel, train_lengths: np.ndarray, val_lengths: np.ndarray, tested: np.ndarray
) -> bool:
    """Whether a series too short for a training window is still fit, forecast from its input chunk: a shape that
    reads short series (the recurrent one) reads any series holding it, so in a panel where another series trains (one
    that is kept: it validates and, after test_after, has a test window), it needs no window of its own."""
    trains = train_lengths >= _window_points(config) + _lag(config, panel.season)
    validates = val_lengths >= max(1, config.val_origins)
    return shape_of(config.shape).reads_short_series and len(panel) > 1 and bool((trains & validates & tested).any())


def _too_short(
    config: ForecasterConfig, panel: Panel, train_lengths: np.ndarray, val_lengths: np.ndarray, reads_only: bool
) -> np.ndarray:
    """(S,) bool: the series with too few points before their validation part for one training window (with
    `reads_only`, for the input chunk), or with fewer validation points than origins."""
    least = config.input_chunk_length if reads_only else _window_points(config)
    return (train_lengths < least + _lag(config, panel.season)) | (val_lengths < max(1, config.val_origins))


def _window_points(config: ForecasterConfig) -> int:
    """The fewest points of a series (after the differences) that give one training window (Shape.window_points)."""
    return shape_of(config.shape).window_points(config)


def _refuse_short(
    config: ForecasterConfig,
    panel: Panel,
    lengths: np.ndarray,
    short: np.ndarray,
    train_lengths: np.ndarray,
    val_lengths: np.ndarray,
    cut: Cut,
    reads_only: bool = False,
) -> None:
    """Name the series too short for this fit (`lengths`: each series' whole length, its test window included) and
    what they would need."""
    lag = _lag(config, panel.season)
    needed = _length_needed(config, lag, cut, reads_only)
    if len(panel) == 1 and cut.val_size is not None:
        raise SeriesError(
            f"the series has {lengths[0]} points, too few for this fit: it {needed.removeprefix('each ')}; "
            + shape_of(config.shape).short_series(config)
        )
    if len(panel) == 1:  # the messages of a single series cut at a date: what to change in its split or windows
        if train_lengths[0] < _window_points(config) + lag:
            raise SeriesError(shape_of(config.shape).short_training_part(config, int(train_lengths[0]), lag, needed))
        raise SeriesError(
            f"val_origins={config.val_origins} is more than the {val_lengths[0]} points of the validation part: each "
            "origin is a point of it; lower val_origins"
        )
    shown = ", ".join(str(n) for n in lengths[short][:5])
    raise SeriesError(
        f"{panel.label}: {short.sum()} of {len(panel)} series are too short for this fit: "
        f"{panel.id_list(panel.ids[short])} (with {shown}{' ...' if short.sum() > 5 else ''} points); "
        f"{needed}; drop them with --drop-short-series (drop_short=True), or "
        f"{shape_of(config.shape).shorter(config, reads_only)}"
    )


def _length_needed(config: ForecasterConfig, lag: int, cut: Cut, reads_only: bool = False) -> str:
    window = (config.input_chunk_length if reads_only else _window_points(config)) + lag
    differenced = f" + the {lag} that {config.target_transform} takes" if lag else ""
    if reads_only:
        one_window = (
            f"input_chunk_length{differenced} = {window} to read (fewer than training_length + 1{differenced} = "
            f"{_window_points(config) + lag} are forecast without training on them)"
        )
    else:
        one_window = shape_of(config.shape).one_window(config, lag, differenced)
    validation = max(1, config.val_origins)
    tested = f", then the {cut.test_size} of its test window" if cut.test_size else ""
    if cut.val_size is not None:
        return (
            f"each needs at least {window + cut.val_size + cut.test_size} points ({one_window}, {cut.val_size} to "
            f"validate on{tested})"
        )
    return (
        f"each needs {one_window} up to split_after={cut.split_after}, and {validation} after it to validate on{tested}"
    )


def _floor_options(config: ForecasterConfig) -> tuple[float, str] | None:
    """The value every point must exceed for the log and the division by a window's level, and the options that
    ask for it; None where nothing is asked."""
    transform = config.target_transform
    if transform == "log_if_positive":  # logs only the series it can; window division is refused with it
        return None
    if not (transform.startswith("log") or config.window_norm == "divide"):
        return None
    # The log needs values above 0; a window's level after the log is above 0 only for values above 1.
    floor = 1.0 if transform.startswith("log") and config.window_norm == "divide" else 0.0
    options = " with ".join(
        option
        for option, used in (
            (f"target_transform={transform!r}", transform.startswith("log")),
            ("window_norm='divide'", config.window_norm == "divide"),
        )
        if used
    )
    return floor, options


def _check_values(config: ForecasterConfig, seen: Panel) -> None:
    """The log, and the division by a window's level, need every value the fit sees above a floor."""
    asked = _floor_options(config)
    if asked is None:
        return
    floor, options = asked
    low = np.flatnonzero(seen.values <= floor)
    if not len(low):
        return
    row = int(low[np.argmin(seen.lines[low])] if seen.lines is not None else low[0])  # the first in the file
    series = np.unique(np.searchsorted(seen.offsets, low, side="right") - 1)
    more = f" (and {len(series) - 1} more series)" if len(series) > 1 else ""
    where = f"{seen.where(row)}{more}: " if seen.where(row) else ""
    raise SeriesError(
        f"{where}{options} needs values above {floor:g}, and the value at {seen.describe_time(seen.times[row])} is "
        f"{seen.values[row]:g}; use target_transform='none' (or a difference) and window_norm='subtract' or 'none', "
        "or shift the series"
    )


def _check_metric(metric: str, train: Panel, val: Panel) -> None:
    if metric == "mape":
        zero = np.flatnonzero(val.values == 0)
        if not len(zero):
            return
        if len(val) == 1:
            shown = ", ".join(val.describe_time(t) for t in val.times[zero[:5]]) + (" ..." if len(zero) > 5 else "")
            raise SeriesError(
                f"the validation part has {len(zero)} zero value(s) (at {shown}), where MAPE is undefined; "
                "move split_after so the validation months have no zeros, or shift the series away from 0"
            )
        series = np.unique(np.searchsorted(val.offsets, zero, side="right") - 1)
        first = f" (the first on {val.line_kind} {val.lines[zero].min()})" if val.lines is not None else ""
        raise SeriesError(
            f"{val.label}: MAPE is undefined on {len(series)} series with zeros in their validation part: "
            f"{val.id_list(val.ids[series])}{first}; rank by metric='smape' or 'mase' (--metric), which are defined "
            "there"
        )
    if metric == "mase":
        scales = mase_scales(train)
        undefined = np.flatnonzero(~(scales > 0))
        if len(undefined):
            raise SeriesError(
                f"{train.label}: MASE is undefined on {len(undefined)} series: {train.id_list(train.ids[undefined])}; "
                f"their training part is a season long or less, or repeats itself exactly every {train.season} points "
                "(a seasonal naive error of 0, by which MASE divides); rank by metric='smape' (--metric)"
            )


def _timestamp(when: str | int, option: str) -> pd.Timestamp:
    try:
        return pd.Timestamp(when)
    except (ValueError, TypeError):
        raise SeriesError(f"{option}={when!r} is not a date; use a date such as 1959-01-01") from None
