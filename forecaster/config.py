"""The forecaster's hyperparameters: one typed dataclass, with the options and meaning of Darts' RNNModel and
BlockRNNModel.

A sweep checks every configuration on the driver in milliseconds, before any trial is scheduled. What a shape of
model needs of a configuration its own class checks (forecaster/shapes): the first check of each shape imports its
module, and torch with it.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
from collections.abc import Mapping
from typing import Any

from forecaster.shapes import shape_names, shape_of

MODELS = ("RNN", "LSTM", "GRU")
TARGET_TRANSFORMS = ("none", "log", "diff", "log_diff", "seasonal_diff", "log_seasonal_diff", "log_if_positive")
WINDOW_NORMS = ("none", "subtract", "divide")
LOSSES = ("mse", "l1", "pinball", "smape", "mase")
ORIGINAL_UNIT_LOSSES = ("smape", "mase")
"""Losses computed on the predictions in original units (the metrics the field scores with)."""
COVARIATE_SCALINGS = ("series", "shared")
COVARIATE_PATHS = ("net", "linear", "none")
ACCELERATORS = ("cpu", "gpu", "tpu", "auto")
"""Where a fit trains, as Lightning's Trainer names it."""
MAX_RANDOM_STATE = 2**32 - 1


def setting(default: Any, help: str) -> Any:
    """A hyperparameter, of the shared config or of a shape's settings, whose help text the command lines show
    (`python -m forecaster.fit --help`)."""
    return dataclasses.field(default=default, metadata={"help": help})


_field = setting


class ConfigError(ValueError):
    """A hyperparameter is unknown or impossible; the message names it and says why."""


@dataclasses.dataclass(frozen=True)
class ShapeSettings:
    """The settings one shape of model reads and no other: a frozen dataclass of its own fields (each declared with
    `setting`), which its `__post_init__` checks and normalises. A shape's class names it (Shape.settings); a
    ForecasterConfig of that shape holds an instance and reads its fields as its own (`config.training_length`)."""

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))


@dataclasses.dataclass(frozen=True, init=False)
class ForecasterConfig:
    """One RNN forecaster: the hyperparameters every shape of model reads, and the settings of its shape
    (`settings`, whose fields it reads as its own). The defaults are the seed configuration of the benchmarks.

    Made from keywords as one flat set (`ForecasterConfig(shape="direct", output_chunk_length=6)`): each keyword is a
    shared field or a setting of the shape; another shape's setting is not read (and is left out), an unknown one is
    refused."""

    model: str = _field("RNN", "recurrent cell: RNN (tanh), LSTM or GRU")
    hidden_dim: int = _field(20, "size of the hidden state of every recurrent layer")
    n_rnn_layers: int = _field(1, "number of stacked recurrent layers")
    dropout: float = _field(0.0, "dropout between stacked layers, in [0, 1); no effect with one layer (as in PyTorch)")
    batch_size: int = _field(16, "training windows per optimizer step")
    n_epochs: int = _field(300, "training epochs, each of at most windows_per_epoch windows")
    lr: float = _field(1e-3, "Adam learning rate")
    loss: str = _field(
        "mse",
        "training loss: mse (Darts' default), l1 (whose forecasts aim at the median, as sMAPE and MASE reward) or "
        "pinball (the quantile loss at pinball_tau), in the net's units; or smape or mase in original units, as the "
        "metrics are scored (MASE: each series' errors "
        "divided by its in-sample seasonal naive error), over a direct window's output block or a recurrent one's "
        "next-step predictions",
    )
    input_chunk_length: int = _field(
        14,
        "points of history the model reads before it forecasts; recurrent shape: below training_length; direct "
        "shape: any length, series with fewer points padded and masked",
    )
    shape: str = _field(
        "recurrent",
        "recurrent: Darts' RNNModel, which predicts the next point at every position of its windows and forecasts "
        "by feeding each prediction back; direct: Darts' BlockRNNModel, whose RNN reads input_chunk_length points "
        "and whose fully connected layers emit output_chunk_length points at once (longer forecasts roll forward "
        "block by block), with shorter histories padded and masked; hybrid: Smyl's ES-RNN, the direct shape reading "
        "the log of each series less a level and seasonal factors that per-series exponential smoothing gives, its "
        "coefficients and initial factors learnt with the net (forecaster/features/smoothing.py)",
    )
    pinball_tau: float = _field(
        0.48,
        "loss pinball: the quantile the forecasts aim at; a little below the median (Smyl's 0.45-0.49) offsets the "
        "upward bias of forecasts made in logs",
    )
    windows_from_last: int = _field(
        0,
        "draw training windows only where the first point they forecast (after their input chunk) is among the last "
        "N points of each series' training part (N-BEATS' L_H horizons); 0: over the whole training part",
    )
    windows_per_epoch: int = _field(
        4096,
        "training windows per epoch: every window once, in a random order, where there are no more and every series "
        "has as many (one series of a few hundred points); otherwise this many, each drawn by picking a series "
        "uniformly at random, then one of its windows: every series weighs the same, and an epoch costs the same "
        "however many series the panel has",
    )
    random_state: int = _field(42, "seed of the weights, the shuffling and dropout: same seed, same model on CPU")
    # What the net sees, and how its epochs are scored (forecaster/features/transforms.py). The defaults are the plain
    # path:
    # min-max scaling fit on the training part, one forecast from the end of it, the latest weights.
    target_transform: str = _field(
        "none",
        "transform before scaling: none, log, diff (first differences), seasonal_diff (differences a season "
        "apart), log_diff or log_seasonal_diff (the log first), or log_if_positive (the log of every series whose "
        "values are all above 0, the others as they are: a panel with zeros or negative values); forecasts come "
        "back in original units",
    )
    window_norm: str = _field(
        "none",
        "per-window normalisation by the level of the window's first input_chunk_length points: none, subtract "
        "(after scaling) or divide (instead of scaling, for positive series): a trend then never leaves the "
        "range the net trained on",
    )
    calendar: bool = _field(
        False, "give the net the next point's place in the season (month of year for monthly data) as inputs"
    )
    deseasonalise: bool = _field(
        False,
        "divide each series by its seasonal indices before anything else (classical multiplicative decomposition "
        "of its training part, where the Theta method's autocorrelation test finds a season at the 90 percent "
        "level; an additive one, its seasonal shifts subtracted, where a value below 0 leaves the indices "
        "undefined) and put the season back into the forecasts: the net then forecasts what is left, from a season "
        "estimated on the whole training part instead of the few a window shows",
    )
    ema_decay: float = _field(
        0.0,
        "exponential moving average of the weights, updated every epoch; the average forecasts, is scored and "
        "is saved (0: off, e.g. 0.9)",
    )
    covariate_scaling: str = _field(
        "series",
        "how a numeric known-ahead or historic covariate is standardised on the training part: series (each "
        "series' own mean and deviation: a price against its usual price) or shared (one over every series: a "
        "temperature); 0/1 columns as they are",
    )
    covariate_path: str = _field(
        "net",
        "how the covariates enter: net (the recurrent layers read the known-ahead and historic ones at every step, "
        "as Darts' and neuralforecast's nets do), linear (a linear term of each forecast point's known-ahead values "
        "added to the net's output, a regression whose errors the net forecasts from the series and its "
        "statics: what a short history can learn of them without overfitting; no historic ones) or none (the net "
        "reads no covariate, statics included)",
    )
    seasonal_lag: int = _field(
        0,
        "recurrent shape: every step also reads the value this many points before the point it predicts (the week "
        "of hourly data, 168: the same hour a week before, as DeepAR's lags and seasonal naive read it), which a "
        "lookback shorter than the season never shows; 0: none. A forecast of more points than the lag reads the "
        "same place a season further back",
    )
    val_origins: int = _field(
        1,
        "forecast origins in the validation part, evenly spaced from its start: the validation MAPE pools every "
        "forecast from each origin to the part's end (1: one forecast from the end of training)",
    )
    settings: ShapeSettings = dataclasses.field(default=ShapeSettings(), metadata={"help": "the shape's own settings"})

    def __init__(self, **values: Any) -> None:
        check_known_keys(values)
        shared = {field.name: field for field in dataclasses.fields(self) if field.name != "settings"}
        for name, field in shared.items():
            object.__setattr__(self, name, values.get(name, field.default))
        shape = self.shape
        if shape not in shape_names():
            raise ConfigError(f"shape={shape!r} is not one of {', '.join(shape_names())}")
        kind = shape_of(shape).settings
        given = values.get("settings")
        kept = dataclasses.asdict(given) if isinstance(given, ShapeSettings) else dict(given or {})
        own = {name: value for name, value in {**kept, **values}.items() if name in kind.names()}
        object.__setattr__(self, "settings", kind(**own))
        self.__post_init__()

    def __getattr__(self, name: str) -> Any:
        """A setting of the shape's own (`settings`), read as the config's."""
        if name.startswith("__"):  # pickle's and copy's questions of a config being built
            raise AttributeError(name)
        settings = self.__dict__.get("settings")
        if settings is not None and name in type(settings).names():
            return getattr(settings, name)
        owner = next((shape for shape in shape_names() if name in shape_of(shape).settings.names()), None)
        if settings is not None and owner is not None:
            raise AttributeError(
                f"{name} is the {owner} shape's setting, which a config of shape={self.shape!r} has not"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __post_init__(self) -> None:
        model = self.model.upper() if isinstance(self.model, str) else self.model
        if model not in MODELS:
            raise ConfigError(f"model={self.model!r} is not one of {', '.join(MODELS)}")
        object.__setattr__(self, "model", model)
        for name, choices in (
            ("target_transform", TARGET_TRANSFORMS),
            ("window_norm", WINDOW_NORMS),
            ("loss", LOSSES),
            ("covariate_scaling", COVARIATE_SCALINGS),
            ("covariate_path", COVARIATE_PATHS),
        ):
            value = getattr(self, name)
            if value not in choices:
                raise ConfigError(f"{name}={value!r} is not one of {', '.join(choices)}")
        if self.loss in ORIGINAL_UNIT_LOSSES and self.target_transform.endswith("diff"):
            raise ConfigError(
                f"loss={self.loss!r} with target_transform={self.target_transform!r}: a window of differences does not "
                "hold its values in original units (they depend on every point before it); use target_transform "
                "'none' or 'log', or loss mse or l1"
            )
        if self.window_norm == "divide" and self.target_transform == "log_if_positive":
            raise ConfigError(
                "window_norm='divide' with target_transform='log_if_positive': a window of a series kept as it is "
                "may be 0 or below; use window_norm='subtract'"
            )
        if self.window_norm == "divide" and self.target_transform.endswith("diff"):
            raise ConfigError(
                f"window_norm='divide' with target_transform={self.target_transform!r}: differences cross zero, "
                "so a window's level can be 0; use window_norm='subtract' with differences"
            )
        for name in ("calendar", "deseasonalise"):
            value = getattr(self, name)
            if not isinstance(value, (bool, numbers.Integral)) or value not in (0, 1):
                raise ConfigError(f"{name}={value!r} must be true or false")
            object.__setattr__(self, name, bool(value))
        for name, minimum in (
            ("hidden_dim", 1),
            ("n_rnn_layers", 1),
            ("batch_size", 1),
            ("n_epochs", 1),
            ("input_chunk_length", 1),
            ("random_state", 0),
            ("val_origins", 1),
            ("windows_per_epoch", 1),
            ("windows_from_last", 0),
            ("seasonal_lag", 0),
        ):
            object.__setattr__(self, name, whole_number(name, getattr(self, name), minimum))
        if self.random_state > MAX_RANDOM_STATE:
            raise ConfigError(
                f"random_state={self.random_state} must be at most {MAX_RANDOM_STATE} (2**32 - 1), "
                "as NumPy's and Darts' seeds"
            )
        dropout = real_number("dropout", self.dropout)
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"dropout={self.dropout!r} must be in [0, 1): it is the probability of zeroing a unit")
        lr = real_number("lr", self.lr)
        if not lr > 0.0:
            raise ConfigError(f"lr={self.lr!r} must be a positive learning rate, for example 1e-3")
        ema_decay = real_number("ema_decay", self.ema_decay)
        if not 0.0 <= ema_decay < 1.0:
            raise ConfigError(
                f"ema_decay={self.ema_decay!r} must be in [0, 1): 0 turns the average off, 0.9 is typical"
            )
        tau = real_number("pinball_tau", self.pinball_tau)
        if not 0.0 < tau < 1.0:
            raise ConfigError(f"pinball_tau={self.pinball_tau!r} must be in (0, 1): it is the quantile aimed at")
        object.__setattr__(self, "pinball_tau", tau)
        object.__setattr__(self, "dropout", dropout)
        object.__setattr__(self, "lr", lr)
        object.__setattr__(self, "ema_decay", ema_decay)
        if self.seasonal_lag and not shape_of(self.shape).reads_seasonal_lag:
            raise ConfigError(
                f"seasonal_lag={self.seasonal_lag} is the recurrent shape's: the {self.shape} shape reads a season "
                "back through its input chunk (input_chunk_length); set seasonal_lag=0 or shape='recurrent'"
            )
        shape_of(self.shape).check(self)

    @classmethod
    def shared_names(cls) -> tuple[str, ...]:
        """The hyperparameters every shape reads."""
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "settings")

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """Every hyperparameter: the shared ones, then each shape's settings."""
        own = (name for shape in shape_names() for name in shape_of(shape).settings.names())
        return tuple(dict.fromkeys((*cls.shared_names(), *own)))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ForecasterConfig:
        """Build a config from a flat mapping (a Tune trial's config, a JSON file), refusing unknown keys."""
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Flat: the shared hyperparameters, then the shape's settings."""
        return {name: getattr(self, name) for name in self.shared_names()} | dataclasses.asdict(self.settings)

    def replace(self, **changes: Any) -> ForecasterConfig:
        return ForecasterConfig(**{**self.to_dict(), **changes})


def check_known_keys(keys: Mapping[str, Any] | list[str] | tuple[str, ...]) -> None:
    """Raise ConfigError naming every key that is not a hyperparameter, with the closest valid name."""
    valid = (*ForecasterConfig.field_names(), "settings")
    unknown = [key for key in keys if key not in valid]
    if not unknown:
        return
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(key, valid, n=1)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    raise ConfigError(f"unknown hyperparameter {', '.join(hints)}; valid ones are: {', '.join(valid)}")


def layer_sizes(value: Any) -> tuple[int, ...]:
    """hidden_fc_sizes as a tuple of layer sizes: from a tuple or a list (JSON, a Tune search), or one number."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)):
        raise ConfigError(f"hidden_fc_sizes={value!r} must be a list of layer sizes, e.g. [64] or [] for none")
    return tuple(whole_number("hidden_fc_sizes", size, 1) for size in value)


def whole_number(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name}={value!r} must be a whole number, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        number = int(value)
    elif math.isfinite(value) and float(value).is_integer():
        number = int(float(value))  # 20.0 from a float search space is 20
    else:
        raise ConfigError(f"{name}={value!r} must be a whole number")
    if number < minimum:
        raise ConfigError(f"{name}={value!r} must be at least {minimum}")
    return number


def real_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ConfigError(f"{name}={value!r} must be a finite number")
    return float(value)
