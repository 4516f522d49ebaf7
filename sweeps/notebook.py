"""The sweep as a notebook holds it, in neuralforecast's and AutoGluon-TimeSeries' words: `fit` a DataFrame, `predict`
the horizon after it, read the `leaderboard`, `save` the answer and `load` it next month. A thin layer over
`sweeps.sweep` and the saved answer (forecaster.answer.model.AnswerModel): the command line and this class run the
same sweep, check the same data and write the same folder.

    from sweeps import SweepForecaster
    sf = SweepForecaster(h=12, futr_exog_list=["promo"], time_limit="10m", level=[80, 95])
    sf.fit(df, futr_df=next_promotions)        # unique_id, ds, y, promo; the promotions of the 12 months ahead
    sf.leaderboard()                           # every candidate of the ensemble, its scores, weight and seconds
    sf.predict(futr_df=next_promotions)        # unique_id, ds, answer, answer-lo-95, ..., answer-hi-95
    sf.save("shop-model"); SweepForecaster.load("shop-model").predict(df, futr_df=...)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from forecaster.answer.model import AnswerModel
    from sweeps.driver import SweepRun


class NotFittedError(RuntimeError):
    """A SweepForecaster asked for what only a fit (or a load) gives."""


class SweepForecaster:
    """A sweep of the forecaster's nets beside statistical models, answered by their weighted ensemble, over a
    DataFrame of one or many series (unique_id, ds, y, and covariate columns)."""

    def __init__(
        self,
        h: int,
        *,
        sweep: str = "panel",
        futr_exog_list: Sequence[str] = (),
        hist_exog_list: Sequence[str] = (),
        stat_exog_list: Sequence[str] = (),
        time_limit: float | str | None = None,
        level: Sequence[float] = (),
        quantiles: Sequence[float] = (),
        freq: str | None = None,
        **options: Any,
    ):
        """
        Args:
            h: The points to forecast after each series' end; the sweep holds out each series' last `h` to score its
                answer, and validates on the `h` points before them (each backtest window is `h` long).
            sweep: The registered sweep that searches (sweeps.plan.registry): `panel` searches three shapes of net.
            futr_exog_list: Columns of the data known ahead (a promotion, a holiday): `fit` and `predict` take their
                values after each series' end as `futr_df`.
            hist_exog_list: Columns known only up to each point (a measured temperature).
            stat_exog_list: Columns of `static_df` (one row per series) that describe each series.
            time_limit: The whole fit's budget, seconds or a duration such as "10m" (--time-limit).
            level: Prediction intervals at these levels, in percent, scored on the held-out points and forecast.
            quantiles: Forecasts at these quantiles, in (0, 1) (answer_ql0.1, ...).
            freq: The dates' pandas frequency, where it cannot be inferred.
            **options: Any other field of sweeps.SweepOptions, as the command line's options (num_samples, seed,
                val_windows, storage_path, name, ...)."""
        self.h = h
        self.futr_exog_list, self.hist_exog_list = tuple(futr_exog_list), tuple(hist_exog_list)
        self.stat_exog_list = tuple(stat_exog_list)
        self.level, self.quantiles = tuple(level), tuple(quantiles)
        self.options: dict[str, Any] = {"sweep": sweep, "time_limit": time_limit, "freq": freq, **options}
        self.run: SweepRun | None = None
        """The last fit's sweep: its trials, scores, future and files (sweeps.driver.SweepRun)."""
        self.model: AnswerModel | None = None
        """The answer as one model, which `predict` forecasts with."""
        self._data: pd.DataFrame | None = None
        self._board: list[dict[str, Any]] | None = None

    def fit(
        self,
        df: pd.DataFrame,
        futr_df: pd.DataFrame | None = None,
        static_df: pd.DataFrame | None = None,
        progress: bool = False,
    ) -> SweepForecaster:
        """Sweep on `df` and keep its answer: a Ray started here (or the one this process is connected to) runs the
        trials, the baselines and the ensemble, and the sweep's folder keeps everything (`self.run.written`).

        Args:
            df: A long table: unique_id, ds, y, and the columns of futr_exog_list and hist_exog_list.
            futr_df: The futr_exog_list columns at the `h` points after each series' end (unique_id, ds, ...): the
                sweep ends by forecasting them. Without known-ahead columns it is not needed.
            static_df: One row per series: unique_id and the stat_exog_list columns.
            progress: Print Ray Tune's table of the trials as they run.

        Raises:
            PlanError: What in the data or the settings cannot make a sweep (which series, which row), before any
                trial runs."""
        from sweeps.driver import sweep
        from sweeps.plan.options import PlanError, SweepOptions

        if self.futr_exog_list and futr_df is None:
            raise PlanError(
                f"futr_exog_list={list(self.futr_exog_list)}: the fit ends by forecasting the {self.h} points after "
                "each series' end and saving the answer, which needs those columns there: give futr_df (unique_id, "
                "ds and those columns at the next points)"
            )
        if static_df is not None and self.stat_exog_list:  # its id column, by name as in `df`, or else its first
            named = self.options.get("id_column") or "unique_id"
            static_df = static_df[[named if named in static_df.columns else static_df.columns[0], *self.stat_exog_list]]
        options = SweepOptions(
            data=df,
            horizon=self.h,
            futr_exog=self.futr_exog_list,
            hist_exog=self.hist_exog_list,
            futr_data=futr_df,
            static_data=static_df,
            levels=self.level,
            quantiles=self.quantiles,
            **self.options,
        )
        self.run = sweep(options, progress=progress)
        if self.run.future is None:
            written = ", ".join(self.run.written.values()) or "its folder"
            raise NotFittedError(
                f"the sweep ended without an answer (no trial left a model, or it was stopped): see {written}"
            )
        self.model, self._data = self.run.future.model, df
        self._board = None if self.run.scores is None else self.run.scores.leaderboard
        return self

    def predict(
        self,
        df: pd.DataFrame | None = None,
        futr_df: pd.DataFrame | None = None,
        static_df: pd.DataFrame | None = None,
        h: int | None = None,
        level: Sequence[float] | None = None,
        quantiles: Sequence[float] | None = None,
    ) -> pd.DataFrame:
        """The `h` points after each series' end, from the saved answer: no Ray, no training.

        Args:
            df: The history to forecast from (default: what `fit` was given); new points or new series are read as
                the sweep read its data.
            futr_df: The known-ahead columns at the points to forecast.
            static_df: The statics of series the sweep never saw.
            h: Points per series (default: the fit's).
            level: Prediction intervals at these levels, in percent (default: those the answer was calibrated at).
            quantiles: Forecasts at these quantiles (default: the fit's).

        Returns:
            unique_id, ds, answer, and answer-lo-80, answer-hi-80, ..., answer_ql0.1, ... as statsforecast and
            neuralforecast name them."""
        model = self._fitted()
        data = self._data if df is None else df
        if data is None:
            raise NotFittedError("a loaded model forecasts the history it is given: predict(df, ...)")
        return model.forecast(
            data,
            h=h,
            levels=level,
            futr_data=futr_df,
            static_data=static_df,
            quantiles=self.quantiles if quantiles is None else quantiles,
        )

    def leaderboard(self) -> pd.DataFrame:
        """As AutoGluon-TimeSeries' `leaderboard()`: every candidate of the ensemble (each net, each statistical
        model), the nets' plain mean and the answer, best on validation first, with its test score, its weight and
        its seconds."""
        self._fitted()
        if not self._board:
            raise NotFittedError("the leaderboard is the fit's: a loaded model keeps its weights, not its scores")
        return pd.DataFrame(self._board)

    def save(self, path: str | os.PathLike[str]) -> str:
        """The answer saved as one model (the sweep's model/ folder), for `load`, `sweeps.forecast` or
        AnswerModel.load; returns where."""
        return self._fitted().save(path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> SweepForecaster:
        """A saved answer (`save`, or a sweep's folder), ready to `predict(df, ...)` without Ray."""
        from forecaster.answer.model import AnswerModel

        model = AnswerModel.load(path)
        loaded = cls(model.horizon, futr_exog_list=model.futr_exog, hist_exog_list=model.hist_exog)
        loaded.model = model
        return loaded

    def _fitted(self) -> AnswerModel:
        if self.model is None:
            raise NotFittedError("fit(df) first, or SweepForecaster.load(path)")
        return self.model
