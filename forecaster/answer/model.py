"""`AnswerModel`: a sweep's answer as one model a user keeps, loads and forecasts with again next month.

It holds the answer's members with their weights in its ensemble: nets (each a trained `RNNNet`: its configuration,
its weights, and what its transforms learnt per series: scalers, seasonal indices and shifts, which series it logs)
and statistical models (their names and settings: statsforecast fits them on each series of the data at each
forecast, but its last horizon, and runs them on over it, as the sweep fit them before its test window); the interval
calibration (the scaled errors of forecasts made as the answer makes them, on points that ranked no trial:
forecaster.answer.intervals), and the data's description (its columns, frequency, season, horizon and the series it
trained
on).

    model = AnswerModel.load("results/panel-20261128-101500/model")
    future = model.forecast(newer_frame, h=12, levels=[80, 95])   # unique_id, ds, answer, answer-lo-95, ...

Saved as two files, neither a pickle: `model.json` (configurations, description, calibration settings, library
versions) and `tensors.pt` (every weight and per-series array, read with torch.load(weights_only=True) onto the CPU,
wherever it trained). Neither loading nor forecasting imports Ray or Lightning.

A global model forecasts series it never trained on: each member fits its transforms on such a series' own history
(its scaler on every point given, its seasonal indices, whether to log it), as training fit them on each training
series, and reads it as it reads the others; a hybrid member gives it the median smoothing coefficients of the series
it trained on and initial factors from its own seasonal indices (forecaster.shapes.hybrid). Series it trained on keep
what it learnt of them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import platform
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from forecaster.answer.ensemble import weighted_mean
from forecaster.answer.intervals import (
    bands,
    check_levels,
    check_quantiles,
    conformal_quantiles,
    interval_scales,
    level_name,
    member_spread,
    quantile_column,
    quantile_levels,
    quantiles_of,
    spread_units,
)
from forecaster.data.panel import Panel
from forecaster.data.read import SeriesError, load_panel
from forecaster.features.transforms import MinMaxScaler, TargetTransform
from forecaster.training.net import RNNNet

MODEL_FILE = "model.json"
TENSORS_FILE = "tensors.pt"
FORMAT = 2
"""The layout of the two files; a later layout says what it cannot read. 2 (2026-12-06): the nets' weights and the
statistical members, which format 1's readers would ignore."""
READS = (1, 2)
"""The layouts this version reads: format 1's answer is its nets' mean."""
ANSWER = "answer"
"""The forecast's column, as statsforecast names a model's: answer, answer-lo-80, answer-hi-80."""


@dataclasses.dataclass(frozen=True)
class Calibration:
    """What the answer's intervals are made of (forecaster.answer.intervals): per step ahead, the absolute errors of
    calibration forecasts divided by their series' scale, and how far the members miss each trained series' last
    horizon of the points they trained on (one of the three parts of a series' scale, `interval_scales`; a series the
    model never saw goes without)."""

    errors: np.ndarray
    """(horizon, n) scaled errors; NaN where a forecast had no point."""
    fitted_error: np.ndarray
    """(S,) in the order of the model's series (forecaster.answer.intervals.fitted_error, the members' mean)."""
    levels: tuple[float, ...]
    """The levels a forecast gives unless asked for others."""
    method: str = ""
    spread_floor: float = 0.0
    """What each point's unit adds to the members' spread there (forecaster.answer.intervals.spread_units); 0: every
    unit
    is 1 (one member, or a model saved before 2026-12-05, whose errors were not divided by units)."""

    @property
    def horizon(self) -> int:
        return int(self.errors.shape[0])


@dataclasses.dataclass(frozen=True)
class SavedMember:
    net: RNNNet
    trial_id: str = ""
    epochs: int = 0
    """Its trial's best epoch count: the epochs of the net the trial kept."""
    continued: tuple[tuple[str, int], ...] = ()
    """How that net was trained on after its trial, in order: (on which points, how many epochs), e.g.
    (("the validation part", 9), ("the test window", 9)); empty for the trial's net as it trained it."""
    weight: float | None = None
    """Its weight in the answer's ensemble (0: kept with its trial, not forecast); None: the answer is the nets'
    plain mean (a model saved before 2026-12-06)."""


@dataclasses.dataclass(frozen=True)
class StatisticalMember:
    """A statistical model of the answer's ensemble (forecaster.baselines), fit by statsforecast on each series of the
    data it is given, at each forecast: nothing of it is learnt once and kept."""

    name: str
    """A baseline's name (forecaster.baselines.baseline_names, or one `register`ed: registered again before a
    forecast)."""
    weight: float
    seasons: tuple[int, ...] = ()
    """The seasons it was made for on the data (MSTL's: Baseline.seasons); empty: the data's."""
    points: int | None = None
    """Each series' last points it is fit on (None: as many as its seasons need, Baseline.fit_points)."""
    lag: int = 0
    """Each series' last `lag` points are left out of its fit and run on after it without fitting again
    (statsforecast's forward), as the sweep's baselines were fit before its test window and run on for the future;
    0: fit on every point."""

    def forecast(self, panel: Panel, steps: int) -> np.ndarray:
        """(steps, S): its forecast after the end of every series of `panel`, fit on each (but its last `lag`
        points, then run on over them)."""
        from forecaster.baselines import BaselineUnavailable, baseline_of, seasonal_naive

        history = panel.split_at(np.maximum(panel.lengths - self.lag, 0))[0] if self.lag else panel
        baseline = baseline_of(self.name, self.seasons)
        try:
            found, fitted = baseline.fit(history, steps, (), self.points)
        except BaselineUnavailable:  # one series it cannot fit: seasonal naive stands in, as in a panel
            return seasonal_naive(panel, steps)
        except ImportError:
            raise SeriesError(
                f"the model's statistical member {self.name} needs statsforecast: pip install -e '.[baselines]'"
            ) from None
        if self.lag:
            found = baseline.forward(fitted, panel, steps)
        values: np.ndarray = found.values
        return values


@dataclasses.dataclass(frozen=True)
class ModelCovariates:
    """The covariates of a sweep's data (each member keeps how it scales those it reads, and the statics it trained
    with)."""

    futr_exog: tuple[str, ...] = ()
    hist_exog: tuple[str, ...] = ()
    static: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class ModelData:
    """What a saved answer knows of the data it trained on: how to read newer data of it, and what to forecast."""

    freq: str | None
    """The data's frequency; None: a plain integer time index."""
    season: int
    horizon: int
    """The points it forecasts by default."""
    series: tuple[str, ...]
    """The ids it trained on, in order."""
    source: str | None = None
    """Where the sweep read the data."""
    columns: dict[str, str | None] = dataclasses.field(default_factory=dict)
    """The id, date and value columns of the file it trained on, where they were named."""
    covariates: ModelCovariates = ModelCovariates()
    metric: str | None = None
    sweep: str | None = None
    """The sweep's name."""
    first: str | int | None = None
    """The data's first and last times (dates as YYYY-MM-DD); `last` None for the model of the test window."""
    last: str | int | None = None

    def record(self) -> dict[str, Any]:
        """As model.json holds it."""
        found = dataclasses.asdict(self)
        found["series"] = list(self.series)
        found["covariates"] = {name: list(columns) for name, columns in found["covariates"].items()}
        return found

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ModelData:
        """From model.json's data (a model saved before 2026-12-06 may lack any field but the first four)."""
        covariates = record.get("covariates") or {}
        return cls(
            record.get("freq"),
            int(record["season"]),
            int(record["horizon"]),
            tuple(str(series_id) for series_id in record["series"]),
            record.get("source"),
            dict(record.get("columns") or {}),
            ModelCovariates(*(tuple(covariates.get(kind, ())) for kind in ("futr_exog", "hist_exog", "static"))),
            record.get("metric"),
            record.get("sweep"),
            record.get("first"),
            record.get("last"),
        )


@dataclasses.dataclass(frozen=True)
class AnswerModel:
    """A sweep's answer as one model: its members (configurations, weights, what each learnt of each series), the
    interval calibration and the data's description. It forecasts any panel of the data's frequency, series it never
    trained on included, with neither Ray nor Lightning imported."""

    members: list[SavedMember]
    data: ModelData
    calibration: Calibration | None = None
    """None where the sweep calibrated no intervals (no --levels): the model then forecasts points only."""
    versions: dict[str, str] = dataclasses.field(default_factory=dict)
    trained_on: list[str] = dataclasses.field(default_factory=list)
    statistical: list[StatisticalMember] = dataclasses.field(default_factory=list)
    """The statistical models of its ensemble, beside the nets (`members`)."""

    # --- what it knows ------------------------------------------------------------------------------------------
    @property
    def horizon(self) -> int:
        return self.data.horizon

    def new_series(self, panel: Panel) -> list[str]:
        """The ids of `panel` the model never trained on.

        Args:
            panel: Series to forecast.

        Returns:
            Their ids, in the panel's order; each member reads them with transforms fit on their own history."""
        return [str(series_id) for series_id in panel.ids[known_rows(self.data.series, panel) < 0]]

    # --- forecasting --------------------------------------------------------------------------------------------
    @property
    def futr_exog(self) -> list[str]:
        """The known-ahead covariates its members read: their future comes with each forecast (futr_data). Of the
        sweep's, those that some member reads (none where every member was told to read none: covariate_path)."""
        return self._read_by_members("futr_exog")

    @property
    def hist_exog(self) -> list[str]:
        """The historic covariates its members read, beside y in the data."""
        return self._read_by_members("hist_exog")

    def _read_by_members(self, kind: str) -> list[str]:
        from forecaster.baselines import baseline_of

        given: tuple[str, ...] = getattr(self.data.covariates, kind)
        if kind == "futr_exog" and any(baseline_of(member.name).reads_futr for member in self.statistical):
            return list(given)  # its regressors: every known-ahead covariate of the sweep
        read: set[str] = set()
        for member in self.members:
            if member.weight == 0:
                continue
            inputs = member.net.transform.inputs
            if inputs is not None:
                read |= set(inputs.futr_names if kind == "futr_exog" else inputs.hist_names)
        return [name for name in given if name in read]

    def weights(self) -> np.ndarray:
        """(nets + statistical members,): each member's weight in the answer, the nets first; the nets' plain mean for
        a model saved before the ensemble."""
        if not self.statistical and any(member.weight is None for member in self.members):
            return np.full(len(self.members), 1.0 / len(self.members))
        return np.array([*(m.weight or 0.0 for m in self.members), *(m.weight for m in self.statistical)])

    def read(
        self,
        data: Panel | pd.DataFrame | str | os.PathLike[str],
        columns: Mapping[str, str | None] | None = None,
        futr_data: pd.DataFrame | str | os.PathLike[str] | None = None,
        static_data: pd.DataFrame | str | os.PathLike[str] | None = None,
    ) -> Panel:
        """`data` as a checked panel, read as the sweep read its data, with the covariates the model reads.

        Args:
            data: A long table (unique_id, ds, y and the covariate columns), a CSV or Parquet file of one, or a Panel.
            columns: {"id": ..., "date": ..., "value": ...}, where this file names its columns otherwise than the
                sweep's data did.
            futr_data: The known-ahead covariates of the points to forecast (unique_id, ds and those columns),
                where the model reads any.
            static_data: The statics of series it never trained on (one row per unique_id); those it trained on
                keep the statics it trained with.

        Returns:
            The panel, on a plain integer time index with the sweep's season.

        Raises:
            SeriesError: A problem in the data, a covariate the model reads that is missing, or a time column of
                another kind or frequency than the model's."""
        if isinstance(data, Panel):
            panel = data
        else:
            named = {**self.data.columns, **{k: v for k, v in (columns or {}).items() if v}}
            source = data.reset_index(drop=True) if isinstance(data, pd.DataFrame) else data
            if self.futr_exog and futr_data is None:
                raise SeriesError(
                    f"the model reads the known-ahead covariates {', '.join(self.futr_exog)}: give their values for "
                    "the points to forecast (unique_id, ds and those columns) with --futr-data FILE"
                )

            def load(season: int | None = None, freq: str | None = None) -> Panel:
                return load_panel(
                    source,
                    named.get("id"),
                    named.get("date"),
                    named.get("value"),
                    freq=freq,
                    season_length=season,
                    futr_exog=self.futr_exog,
                    hist_exog=self.hist_exog,
                    futr_data=futr_data,
                    static_data=static_data,
                )

            try:
                panel = load(None if self.data.freq else self.data.season)
            except SeriesError as error:
                if not self.data.freq:
                    raise
                panel = _first_that_reads(  # a frequency the sweep was told, or integers where the model has dates
                    error, lambda: load(freq=self.data.freq), lambda: load(self.data.season)
                )
        self._check_time(panel)
        if panel.season != self.data.season:
            raise SeriesError(
                f"{panel.label}: its season is {panel.season} points; the model was trained on a season of "
                f"{self.data.season}"
            )
        return panel

    def forecast(
        self,
        data: Panel | pd.DataFrame | str | os.PathLike[str],
        h: int | None = None,
        levels: Sequence[float] | None = None,
        futr_data: pd.DataFrame | str | os.PathLike[str] | None = None,
        static_data: pd.DataFrame | str | os.PathLike[str] | None = None,
        quantiles: Sequence[float] = (),
        statistical_forecasts: Mapping[str, np.ndarray] | None = None,
    ) -> pd.DataFrame:
        """`h` points after the end of every series of `data`, with their bounds, as statsforecast names its columns.

        Args:
            data: A long table (unique_id, ds, y), a CSV or Parquet file of one, or a Panel.
            h: Points to forecast after each series' end (default: the sweep's horizon).
            levels: Prediction intervals at these levels, in percent (default: the sweep's; empty: none).
            futr_data: The known-ahead covariates of the `h` points after each series' end, where it reads any.
            static_data: The statics of series it never trained on, where it reads any.
            quantiles: Forecasts at these quantiles (in (0, 1)), read from the calibrated intervals they bound.
            statistical_forecasts: Its statistical members' forecasts of these `h` points, (h, S) by name, where
                already made (the sweep's tasks, fitting them as this would); otherwise each is fit here.

        Returns:
            A long table: unique_id, ds, answer, and answer-lo-95, answer-lo-80, answer-hi-80, answer-hi-95 for levels
            80 and 95; answer_ql0.1, answer_ql0.9 (neuralforecast's names) for quantiles 0.1 and 0.9.

        Raises:
            SeriesError: What in the data, or in the request, it cannot forecast (a series too short to read, levels
                beyond its calibration)."""
        panel = self.read(data, futr_data=futr_data, static_data=static_data)
        h = self.horizon if h is None else int(h)
        if h < 1:
            raise ValueError(f"h={h}: forecast at least 1 point")
        levels = self._levels(levels, h)
        try:
            quantiles = check_quantiles(quantiles)
        except ValueError as error:
            raise SeriesError(str(error)) from None
        needed = quantile_levels(quantiles)
        if needed:
            self._levels(needed, h)
        members = self.ensemble_forecasts(panel, h, statistical_forecasts)
        forecast = weighted_mean(members, self.weights())
        table = pd.DataFrame({"unique_id": np.repeat(panel.ids, h), "ds": panel.future_times(h).reshape(-1)})
        table[ANSWER] = forecast.T.reshape(-1)
        found = self.bounds(panel, forecast, members, sorted(set(levels) | set(needed)))
        for level in levels:
            table[f"{ANSWER}-lo-{level_name(level)}"] = found[level][0].T.reshape(-1)
            table[f"{ANSWER}-hi-{level_name(level)}"] = found[level][1].T.reshape(-1)
        ordered = [f"{ANSWER}-lo-{level_name(level)}" for level in sorted(levels, reverse=True)]
        ordered += [f"{ANSWER}-hi-{level_name(level)}" for level in sorted(levels)]
        for quantile, values in (quantiles_of(forecast, found, quantiles) or {}).items():
            table[quantile_column(ANSWER, quantile)] = values.T.reshape(-1)
            ordered.append(quantile_column(ANSWER, quantile))
        return table[["unique_id", "ds", ANSWER, *ordered]]

    def forecast_columns(self, panel: Panel, steps: int) -> np.ndarray:
        """(steps, S): the answer's forecast after the end of every series of `panel`, in original units: its members'
        weighted mean; a series is forecast by every member that can read it (one it never trained on, with
        transforms fit on its own history), SeriesError naming those no member can."""
        return weighted_mean(self.ensemble_forecasts(panel, steps), self.weights())

    def ensemble_forecasts(
        self, panel: Panel, steps: int, statistical_forecasts: Mapping[str, np.ndarray] | None = None
    ) -> np.ndarray:
        """(nets + statistical members, steps, S): every member's forecast, the nets first (`member_forecasts`),
        then the statistical members' (`statistical_forecasts` where given, else fit here)."""
        given = statistical_forecasts or {}
        fitted = [given[m.name] if m.name in given else m.forecast(panel, steps) for m in self.statistical]
        nets = self.member_forecasts(panel, steps, read_by_others=bool(fitted))
        return np.concatenate([nets, np.asarray(fitted, dtype=np.float64).reshape(-1, steps, len(panel))])

    def member_forecasts(self, panel: Panel, steps: int, read_by_others: bool = False) -> np.ndarray:
        """(nets, steps, S): each net's forecast after the end of every series of `panel`, in original units,
        NaN for a series too short for it to read (and everywhere for a net of weight 0 in the ensemble); SeriesError
        naming the series no net can read (unless `read_by_others`: statistical members forecast every series)."""
        found = np.full((len(self.members), steps, len(panel)), np.nan)
        fitted: dict[tuple[Any, ...], TargetTransform] = {}
        for index, member in enumerate(self.members):
            if member.weight == 0:  # kept with the trials it came from, not forecast
                continue
            net = member.net
            readable = panel.lengths >= net.points_read
            if not readable.any():
                continue
            some = panel if readable.all() else panel.take(readable)
            if net.shape.forecasts_new_series:  # it reads every point, with its own fallback for a series it never saw
                found[index][:, readable] = net.forecast_columns(some, steps, new_series=True)
                continue
            new = known_rows(net.series_ids or [], some) < 0
            some, transform = self._transform_for(net, some, fitted)
            self._check_values(net, some, transform, new)
            # What the forecast reads of each series (its transforms come from the whole of it): the context and
            # the differences' lag before it, not every point of a long history.
            read = np.minimum(some.lengths, net.config.input_chunk_length + transform.lag)
            found[index][:, readable] = net.forecast_columns(some.split_at(some.lengths - read)[1], steps, transform)
        unread = ~np.isfinite(found).any(axis=(0, 1))
        if unread.any() and not read_by_others:
            needed = min(member.net.points_read for member in self.members)
            raise SeriesError(
                f"{panel.label}: series {panel.id_list(panel.ids[unread])} "
                f"{'has' if unread.sum() == 1 else 'have'} {int(panel.lengths[unread].min())} point(s); the model "
                f"reads at least the last {needed} of a series: give more of its history, or leave it out"
            )
        return found

    def bounds(
        self, panel: Panel, forecast: np.ndarray, members: np.ndarray, levels: Sequence[float]
    ) -> dict[float, tuple[np.ndarray, np.ndarray]]:
        """{level: (lower, upper)}, each (steps, S), around `forecast` (steps, S), the mean of `members` (members,
        steps, S: each member's forecast of `panel`'s series): each step's conformal quantile of the calibration's
        scaled errors times each series' scale, over its history given here, and each point's unit (the members'
        spread there plus the calibration's floor); a lower bound no lower than 0 for a series never below 0."""
        if not levels:
            return {}
        calibration = self.calibration
        assert calibration is not None, "levels are refused (_levels) where the model holds no calibration"
        quantiles = conformal_quantiles(calibration.errors, levels)
        rows = known_rows(self.data.series, panel)
        missed = np.where(rows >= 0, calibration.fitted_error[np.maximum(rows, 0)], np.nan)
        lowest = np.minimum.reduceat(panel.values, panel.offsets[:-1])
        scale = interval_scales(panel, calibration.horizon, missed)
        units = spread_units(member_spread(members, scale), calibration.spread_floor)
        return bands(forecast, scale, quantiles, floor=np.where(lowest >= 0, 0.0, -np.inf), units=units)

    def _levels(self, levels: Sequence[float] | None, h: int) -> tuple[float, ...]:
        if levels is None:
            return self.calibration.levels if self.calibration is not None and h <= self.calibration.horizon else ()
        levels = check_levels(levels)
        if not levels:
            return ()
        if self.calibration is None:
            raise SeriesError(
                "this model holds no interval calibration (its sweep ran without --levels): forecast without levels, "
                "or run the sweep again with --levels 80 95"
            )
        if h > self.calibration.horizon:
            raise SeriesError(
                f"the intervals were calibrated on {self.calibration.horizon} steps ahead and {h} are asked for: "
                f"forecast at most {self.calibration.horizon} steps with levels, or {h} without levels"
            )
        quantiles = conformal_quantiles(self.calibration.errors, levels)
        unbounded = [level for level, half in quantiles.items() if not np.isfinite(half).all()]
        if unbounded:
            count = int(np.isfinite(self.calibration.errors).sum(axis=1).min())
            raise SeriesError(
                f"level {', '.join(level_name(level) for level in unbounded)} needs more calibration errors than the "
                f"{count} per step this model holds: ask for lower levels (e.g. 80 90)"
            )
        return levels

    def _check_time(self, panel: Panel) -> None:
        freq = self.data.freq
        if freq is None and panel.dated:
            raise SeriesError(
                f"{panel.label}: its time column holds dates ({panel.freq!r}); the model was trained on a plain "
                "integer time index: give the times as the integers it continues"
            )
        if freq is not None and not panel.dated:
            raise SeriesError(
                f"{panel.label}: its time column holds integers; the model was trained on dates of frequency {freq!r}"
            )
        if freq is not None and pd.tseries.frequencies.to_offset(panel.freq) != pd.tseries.frequencies.to_offset(freq):
            raise SeriesError(
                f"{panel.label}: its dates have frequency {panel.freq!r}; the model was trained on {freq!r} data: "
                f"resample it to {freq!r}"
            )

    def _transform_for(
        self, net: RNNNet, panel: Panel, fitted: dict[tuple[Any, ...], TargetTransform]
    ) -> tuple[Panel, TargetTransform]:
        """`panel` (with, on a plain time index, each series' place in the season as training counted it) and the
        net's transform for each of its series, in order: what the net learnt of a series it trained on, and for one
        it never saw, transforms fit on that series' own history (`fitted` keeps those of a panel across members alike
        in every setting TargetTransform.fit reads)."""
        rows = known_rows(net.series_ids or [], panel)
        new = rows < 0
        own = net.transform
        if not new.any():
            if net.time_origins is not None and not panel.dated:
                panel = dataclasses.replace(panel, origins=net.time_origins[rows])
            return panel, _rows_of(own, rows)
        config = net.config
        key = (
            config.shape,
            config.target_transform,
            config.deseasonalise,
            config.window_norm,
            config.calendar,
            config.covariate_scaling,
            config.covariate_path,
            config.seasonal_lag,
            tuple(panel.ids[new]),
        )
        if key not in fitted:
            with np.errstate(divide="ignore", invalid="ignore"):  # a log of a value at or below 0: refused after
                fitted[key] = TargetTransform.fit(config, panel.take(new))
        fresh = fitted[key]
        merged = _merged(own, rows, fresh, new)
        if net.time_origins is not None and not panel.dated:
            origins = np.array(panel.first_times() if panel.origins is None else panel.origins, dtype=np.int64)
            origins[~new] = net.time_origins[rows[~new]]
            panel = dataclasses.replace(panel, origins=origins)
        return panel, merged

    def _check_values(self, net: RNNNet, panel: Panel, transform: TargetTransform, new: np.ndarray) -> None:
        """A member that logs a series cannot read a value at or below 0 of it (the points its context reads; every
        point of a series it never saw, on which its scaler is fit): SeriesError naming the point."""
        logged = np.ones(len(panel), dtype=bool) if transform.log else transform.logged
        if logged is None or not logged.any():
            return
        context = net.config.input_chunk_length + transform.lag
        first_read = np.where(new, 0, panel.lengths - context)
        read = panel.positions >= np.repeat(first_read, panel.lengths)
        bad = np.flatnonzero(read & np.repeat(logged, panel.lengths) & (panel.values <= 0))
        if len(bad):
            row = int(bad[0])
            raise SeriesError(
                f"{panel.label}: {panel.where(row) or 'a point'}: value {panel.values[row]:g} at "
                f"{panel.describe_time(panel.times[row])}, and a member of the model ({net.config.target_transform}) "
                "takes the log of that series, which is undefined at or below 0: check the value, or forecast the "
                "series with a model that does not log it"
            )

    # --- saving -------------------------------------------------------------------------------------------------
    def to_files(self) -> dict[str, bytes]:
        """{file name: bytes}: model.json and tensors.pt."""
        tensors: dict[str, torch.Tensor] = {}
        members = []
        series = {series_id: row for row, series_id in enumerate(self.data.series)}
        for index, member in enumerate(self.members):
            net, prefix = member.net, f"members.{index}."
            hyperparameters = net.hyperparameters
            for name, tensor in net.state_dict().items():
                tensors[f"{prefix}state.{name}"] = tensor.detach().cpu().contiguous()
            arrays = {
                name: np.asarray(hyperparameters[name]) for name in PER_SERIES if hyperparameters.get(name) is not None
            }
            for name, array in arrays.items():
                tensors[prefix + name] = torch.as_tensor(array)
            ids = hyperparameters["series_ids"] or []
            tensors[prefix + "series_rows"] = torch.as_tensor([series[i] for i in ids], dtype=torch.int64)
            members.append(
                {
                    "trial_id": member.trial_id,
                    "epochs": member.epochs,
                    "weight": member.weight,
                    "continued": [{"on": on, "epochs": epochs} for on, epochs in member.continued],
                    "config": hyperparameters["config"],
                    "season": hyperparameters["season"],
                    "per_series": sorted(arrays),
                    **({"step_inputs": hyperparameters["step_inputs"]} if "step_inputs" in hyperparameters else {}),
                }
            )
        calibration = None
        if self.calibration is not None:
            tensors["calibration.errors"] = torch.as_tensor(self.calibration.errors, dtype=torch.float64)
            tensors["calibration.fitted_error"] = torch.as_tensor(self.calibration.fitted_error, dtype=torch.float64)
            calibration = {
                "levels": list(self.calibration.levels),
                "method": self.calibration.method,
                "spread_floor": self.calibration.spread_floor,
            }
        record = {
            "format": FORMAT,
            "kind": "the answer of a sweep: the weighted mean forecast of its members, nets and statistical models",
            "data": self.data.record(),
            "members": members,
            "statistical": [dataclasses.asdict(member) for member in self.statistical],
            "calibration": calibration,
            "trained_on": self.trained_on,
            "versions": self.versions or library_versions(),
        }
        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        # In the order they are written: the description last, so that a folder whose writing stopped half way holds
        # no model.json that its tensors do not match.
        return {TENSORS_FILE: buffer.getvalue(), MODEL_FILE: json.dumps(record, indent=1).encode()}

    @classmethod
    def from_files(cls, read: Callable[[str], bytes], where: str = "the model") -> AnswerModel:
        """The model from its two files, `read(name)` giving each one's bytes."""
        record = json.loads(read(MODEL_FILE))
        if record.get("format") not in READS:
            raise ValueError(
                f"{where}: saved in format {record.get('format')!r}; this version reads formats "
                f"{', '.join(map(str, READS))}: load it "
                "with the version that saved it (its model.json says which)"
            )
        tensors = torch.load(io.BytesIO(read(TENSORS_FILE)), map_location="cpu", weights_only=True)
        series = np.array(record["data"]["series"], dtype=object)
        members = []
        for index, saved in enumerate(record["members"]):
            prefix = f"members.{index}."
            arrays = {name: tensors[prefix + name].numpy() for name in saved["per_series"]}
            net = RNNNet(
                saved["config"],
                season=saved["season"],
                series_ids=series[tensors[prefix + "series_rows"].numpy()].tolist(),
                step_inputs=saved.get("step_inputs"),
                **arrays,
            )
            state = {name[len(prefix) + 6 :]: t for name, t in tensors.items() if name.startswith(prefix + "state.")}
            net.load_state_dict(state)
            continued = tuple((step["on"], int(step["epochs"])) for step in saved.get("continued", []))
            weight = saved.get("weight")
            members.append(
                SavedMember(
                    net.eval(),
                    saved.get("trial_id", ""),
                    int(saved.get("epochs", 0)),
                    continued,
                    None if weight is None else float(weight),
                )
            )
        statistical = [
            StatisticalMember(
                m["name"], float(m["weight"]), tuple(m.get("seasons", ())), m.get("points"), int(m.get("lag", 0))
            )
            for m in record.get("statistical", [])
        ]
        calibration = None
        if record.get("calibration") is not None:
            calibration = Calibration(
                errors=tensors["calibration.errors"].numpy(),
                # A model saved before 2026-11-29 scaled by the answer's validation errors instead.
                fitted_error=tensors.get(
                    "calibration.fitted_error", tensors.get("calibration.validation_error")
                ).numpy(),
                levels=tuple(float(level) for level in record["calibration"]["levels"]),
                method=record["calibration"].get("method", ""),
                spread_floor=float(record["calibration"].get("spread_floor", 0.0)),
            )
        return cls(
            members,
            ModelData.from_record(record["data"]),
            calibration,
            record.get("versions", {}),
            record.get("trained_on", []),
            statistical,
        )

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the model to a folder: model.json and tensors.pt, nothing that runs code when loaded.

        Args:
            path: The folder, local or s3:// and gs:// (through pyarrow).

        Returns:
            `path`."""
        filesystem, root = _filesystem(path)
        filesystem.create_dir(root, recursive=True)
        for name, content in self.to_files().items():
            with filesystem.open_output_stream(f"{root}/{name}") as stream:
                stream.write(content)
        return os.fspath(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> AnswerModel:
        """The model saved in a folder, on the CPU.

        Args:
            path: A sweep's results folder, or its `model` folder (local, s3:// or gs://).

        Returns:
            The model, forecasting without Ray or Lightning.

        Raises:
            FileNotFoundError: The folder holds no saved model."""
        filesystem, root = _filesystem(path)
        import pyarrow.fs

        if filesystem.get_file_info(f"{root}/{MODEL_FILE}").type == pyarrow.fs.FileType.NotFound:
            root = f"{root}/model"

        def read(name: str) -> bytes:
            with filesystem.open_input_stream(f"{root}/{name}") as stream:
                return bytes(stream.read())

        try:
            return cls.from_files(read, os.fspath(path))
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{os.fspath(path)}: holds no saved model ({MODEL_FILE} and {TENSORS_FILE}, or a model folder with "
                "them); a sweep saves one at its end unless run with --no-future"
            ) from None


def known_rows(series: Sequence[str], panel: Panel) -> np.ndarray:
    """(S,) each series of `panel`'s row among `series` (what a model trained on), -1 for one it never saw; a model of
    one series takes any one series as its own (a file of one series is named after the file)."""
    if len(series) == 1 and len(panel) == 1:
        return np.zeros(1, dtype=np.int64)
    known = {series_id: row for row, series_id in enumerate(series)}
    return np.array([known.get(series_id, -1) for series_id in panel.ids], dtype=np.int64)


def _first_that_reads(error: SeriesError, *readers: Callable[[], Panel]) -> Panel:
    """The first reader's panel that reads without a SeriesError; else `error`, the first attempt's."""
    for reader in readers:
        try:
            return reader()
        except SeriesError:
            continue
    raise error


PER_SERIES = (
    "scaler_minimum",
    "scaler_scale",
    "time_origins",
    "seasonal_indices",
    "logged_series",
    "seasonal_shifts",
    "year_season",
    "log_shifts",
)
"""What a member's transforms learnt of each series it trained on (RNNNet's per-series arguments; the hybrid's
smoothing coefficients and initial factors are weights, in its state)."""


def library_versions() -> dict[str, str]:
    from importlib import metadata

    found = {"python": platform.python_version()}
    for name in ("torch", "numpy", "pandas", "rnn-sweeps"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _filesystem(path: str | os.PathLike[str]) -> tuple[Any, str]:
    import pyarrow.fs

    name = os.fspath(path)
    if "://" not in name:
        return pyarrow.fs.LocalFileSystem(), os.path.abspath(name).rstrip("/")
    filesystem, root = pyarrow.fs.FileSystem.from_uri(name)
    return filesystem, root.rstrip("/")


def _rows_of(transform: TargetTransform, rows: np.ndarray) -> TargetTransform:
    """The transform of the series at `rows`, in that order."""
    pick: Callable[[np.ndarray | None], np.ndarray | None]
    pick = lambda array: None if array is None else array[rows]  # noqa: E731
    return dataclasses.replace(
        transform,
        scaler=MinMaxScaler(transform.scaler.minimum[rows], transform.scaler.scale[rows]),
        seasonal=pick(transform.seasonal),
        logged=pick(transform.logged),
        shifts=pick(transform.shifts),
        inputs=None if transform.inputs is None else transform.inputs.rows(rows),
        year=pick(transform.year),
    )


def _merged(own: TargetTransform, rows: np.ndarray, fresh: TargetTransform, new: np.ndarray) -> TargetTransform:
    """One row per series: `own`'s rows where `new` is false (at `rows`), `fresh`'s (fit on the new series, in
    order) where it is true."""

    def merge(mine: np.ndarray | None, theirs: np.ndarray | None, empty: float) -> Any:
        known = mine if mine is not None else theirs
        if known is None:
            return None
        shape, dtype = known.shape[1:], known.dtype
        merged = np.full((len(rows), *shape), empty, dtype=dtype)
        if mine is not None:
            merged[~new] = mine[rows[~new]]
        if theirs is not None:
            merged[new] = theirs
        return merged

    def folded(table: np.ndarray | None) -> np.ndarray | None:
        """A new series' table as wide as the model's: a model saved before the week's table (24 places of hourly
        data, where the new series' span the week's 168) takes each place's mean over the week's days."""
        width = None if own.seasonal is None else own.seasonal.shape[1]
        if table is None or width is None or table.shape[1] == width:
            return table
        day: np.ndarray = table.reshape(len(table), -1, width).mean(axis=1)
        return day

    return dataclasses.replace(
        own,
        scaler=MinMaxScaler(
            merge(own.scaler.minimum, fresh.scaler.minimum, 0.0), merge(own.scaler.scale, fresh.scaler.scale, 1.0)
        ),
        seasonal=merge(own.seasonal, folded(fresh.seasonal), 1.0),
        logged=merge(own.logged, fresh.logged, False),
        shifts=merge(own.shifts, folded(fresh.shifts), 0.0),
        inputs=None if own.inputs is None or fresh.inputs is None else own.inputs.merged(rows, fresh.inputs, new),
        year=merge(own.year, fresh.year, 0.0),
    )
