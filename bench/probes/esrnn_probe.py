"""A probe of Smyl's ES-RNN (issue 52) on inner windows, before it becomes a shape of the forecaster: per-series
learnt level and seasonal smoothing (in logs, so additive there: Holt-Winters' multiplicative form), one global GRU
that reads each window less its last level and its seasonal factors and emits the whole horizon, a pinball loss in
that normalised space and a penalty on the level's wiggliness. The per-series parameters train at a higher learning
rate. It scores each inner window's test beside AutoETS, Theta and AutoCES on the same points, and says whether the
hybrid is worth building.

    python bench/probes/esrnn_probe.py --dataset m3_quarterly [--back 1] [--seeds 0 1] [--epochs 40]
        [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SETTINGS = {
    "hidden": 64,
    "lookback": 1.5,  # horizons
    "tau": 0.48,  # the pinball loss' quantile, below the median against a positive bias
    "level_penalty": 200.0,  # times the mean squared second difference of the log level
    "series_lr": 10.0,  # times the net's lr
    "lr": 1e-3,
    "batch": 512,
    "windows_per_epoch": 16384,
    "from_last": 4.0,  # horizons: windows whose forecast starts in each series' last N horizons; 0: every window
    "season": 1,  # 1: learn the season; 0: level only
    "refit": 1,  # 1: the chosen epoch count trained again through the validation part, then forecasting the test
}
"""Smyl's pieces at values the probe's first runs settled on (the level penalty and lr: --set to change them)."""


def log_values(values: np.ndarray) -> tuple[np.ndarray, float]:
    """The series in logs, and the shift added first: 0 where every value is above 0, else 1 % of the series' mean
    absolute value more than its lowest."""
    if values.min() > 0:
        return np.log(values), 0.0
    shift = 0.01 * max(float(np.abs(values).mean()), 1e-6) - min(float(values.min()), 0.0)
    return np.log(values + shift), shift


class ESRNN(nn.Module):
    """Per-series level and seasonal smoothing coefficients (through a sigmoid) and initial seasonal factors (in logs,
    centred), and one global GRU with a linear head that emits the horizon."""

    def __init__(self, series: int, season: int, horizon: int, lookback: int, hidden: int, learn_season: bool):
        super().__init__()
        self.season, self.horizon, self.lookback = season, horizon, lookback
        self.learn_season = learn_season and season > 1
        self.alpha = nn.Parameter(torch.full((series,), -1.0))  # level smoothing, through a sigmoid
        self.gamma = nn.Parameter(torch.full((series,), -2.0))  # season smoothing
        self.initial_season = nn.Parameter(torch.zeros(series, max(season, 1)))  # log factors, centred
        self.rnn = nn.GRU(2, hidden)  # the normalised value and the mask (1: real, 0: padding)
        self.head = nn.Linear(hidden, horizon)

    def smooth(self, z: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Levels (S, T) and seasonal factors (S, T + m) of every series, z (S, T) left-aligned; past a series' end
        the level stays and the factors repeat their last season."""
        rows, steps = z.shape
        alpha, gamma = torch.sigmoid(self.alpha), torch.sigmoid(self.gamma)
        if not self.learn_season:
            level, levels = z[:, 0], [z[:, 0]]
            for t in range(1, steps):
                level = torch.where(t < lengths, alpha * z[:, t] + (1 - alpha) * level, level)
                levels.append(level)
            return torch.stack(levels, 1), torch.zeros(rows, steps + 1, dtype=z.dtype)
        initial = self.initial_season - self.initial_season.mean(1, keepdim=True)
        seasons = list(initial.T)
        level = z[:, 0] - seasons[0]
        levels = [level]
        for t in range(steps):
            s_t = seasons[t]
            live = t < lengths
            if t > 0:
                level = torch.where(live, alpha * (z[:, t] - s_t) + (1 - alpha) * level, level)
                levels.append(level)
            seasons.append(torch.where(live, gamma * (z[:, t] - level) + (1 - gamma) * s_t, s_t))
        return torch.stack(levels, 1), torch.stack(seasons, 1)

    def windows(self, z, levels, seasons, rows, ends):
        """Inputs (lookback, W, 2) and the factors ahead (W, H) of windows whose last input is `ends` of `rows`."""
        offsets = torch.arange(-self.lookback + 1, 1)
        positions = ends[:, None] + offsets[None, :]  # (W, lookback)
        real = positions >= 0
        safe = positions.clamp(min=0)
        last_level = levels[rows, ends]
        values = z[rows[:, None], safe] - last_level[:, None] - seasons[rows[:, None], safe]
        values = torch.where(real, values, 0.0)
        ahead = ends[:, None] + 1 + torch.arange(self.horizon)[None, :]
        factors = seasons[rows[:, None], ahead]
        inputs = torch.stack([values, real.to(values.dtype)], -1).transpose(0, 1)
        return inputs, last_level, factors

    def forward(self, inputs):
        states, _ = self.rnn(inputs)
        return self.head(states[-1])  # (W, H), normalised


def fit(train: list[np.ndarray], horizon: int, season: int, settings: dict, seed: int, epochs: int):
    """Train on `train` (log series) for `epochs`; return the model and its weights after each epoch."""
    torch.manual_seed(seed)
    generator = np.random.default_rng(seed)
    series = len(train)
    lookback = max(1, round(settings["lookback"] * horizon))
    model = ESRNN(series, season, horizon, lookback, settings["hidden"], bool(settings["season"])).double()
    lengths = torch.tensor([len(values) for values in train])
    steps = int(lengths.max())
    z = torch.zeros(series, steps + horizon, dtype=torch.float64)
    for row, values in enumerate(train):
        z[row, : len(values)] = torch.from_numpy(values)
    # Every window whose targets lie in the training part; with from_last, only the last ones.
    candidates = []
    for length in lengths.tolist():
        ends = np.arange(0, length - horizon)
        if settings["from_last"]:
            ends = ends[ends >= length - horizon - round(settings["from_last"] * horizon)]
        candidates.append(ends)
    trained = [row for row, ends in enumerate(candidates) if len(ends)]
    per_series = [model.alpha, model.gamma, model.initial_season]
    optimizer = torch.optim.Adam(
        [
            {"params": per_series, "lr": settings["lr"] * settings["series_lr"]},
            {"params": list(model.rnn.parameters()) + list(model.head.parameters()), "lr": settings["lr"]},
        ]
    )
    history = []
    for _epoch in range(epochs):
        model.train()
        drawn = generator.choice(trained, settings["windows_per_epoch"])
        for start in range(0, len(drawn), settings["batch"]):
            rows_np = drawn[start : start + settings["batch"]]
            ends_np = np.array([generator.choice(candidates[row]) for row in rows_np])
            levels, seasons = model.smooth(z, lengths)
            rows, ends = torch.from_numpy(rows_np), torch.from_numpy(ends_np)
            inputs, last_level, factors = model.windows(z, levels, seasons, rows, ends)
            ahead = ends[:, None] + 1 + torch.arange(horizon)[None, :]
            targets = z[rows[:, None], ahead] - last_level[:, None] - factors
            error = targets - model(inputs)
            tau = settings["tau"]
            loss = torch.maximum(tau * error, (tau - 1) * error).mean()
            if settings["level_penalty"]:
                wiggle = levels[:, 2:] - 2 * levels[:, 1:-1] + levels[:, :-2]
                valid = (torch.arange(2, levels.shape[1])[None, :] < lengths[:, None]).to(wiggle.dtype)
                loss = loss + settings["level_penalty"] * ((wiggle**2) * valid).sum() / valid.sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        history.append({key: value.detach().clone() for key, value in model.state_dict().items()})
    return model, history


@torch.no_grad()
def forecast_after(model: ESRNN, logs: list[np.ndarray], horizon: int) -> np.ndarray:
    """(S, H) log forecasts after the end of each series of `logs` (the same series, in order, as trained)."""
    series = len(logs)
    lengths = torch.tensor([len(values) for values in logs])
    z = torch.zeros(series, int(lengths.max()) + horizon, dtype=torch.float64)
    for row, values in enumerate(logs):
        z[row, : len(values)] = torch.from_numpy(values)
    model.eval()
    levels, seasons = model.smooth(z, lengths)
    ends = lengths - 1
    rows = torch.arange(series)
    m = model.season if model.learn_season else 1
    inputs, last_level, _ = model.windows(z, levels, seasons, rows, ends)
    phase = torch.arange(horizon) % m
    factors = seasons[rows[:, None], lengths[:, None] + phase[None, :]] if model.learn_season else 0.0
    return (model(inputs) + last_level[:, None] + factors).numpy()


def smape(actual: np.ndarray, forecast: np.ndarray) -> float:
    total = np.abs(actual) + np.abs(forecast)
    return float(np.mean(np.where(total > 0, 200 * np.abs(actual - forecast) / np.maximum(total, 1e-12), 0.0)))


def run(dataset: str, back: int, seed: int, epochs: int, settings: dict) -> dict:
    from inner_split import inner_panel, scores

    seen, horizon = inner_panel(dataset, None, back=back)
    # At least 2 training points before validation and test (a window further back leaves some series shorter).
    seen = seen.take(seen.lengths >= 2 * horizon + 2)
    history, test = seen.split_last(horizon)
    ids = [str(i) for i in test.ids]
    season = seen.season
    raw = [history.values[history.offsets[i] : history.offsets[i + 1]] for i in range(len(history))]
    logged = [log_values(values) for values in raw]
    logs = [values for values, _ in logged]
    shifts = np.array([shift for _, shift in logged])
    train_logs = [values[:-horizon] for values in logs]
    val_actual = np.array([values[-horizon:] for values in raw])
    started = time.perf_counter()
    model, states = fit(train_logs, horizon, season, settings, seed, epochs)
    # The epoch by validation sMAPE, as a trial keeps its best; then its states run through validation (no refit).
    val_scores = []
    for state in states:
        model.load_state_dict(state)
        forecast = np.exp(forecast_after(model, train_logs, horizon)) - shifts[:, None]
        val_scores.append(smape(val_actual, forecast))
    best = int(np.argmin(val_scores))
    model.load_state_dict(states[best])
    test_forecast = np.exp(forecast_after(model, logs, horizon)) - shifts[:, None]
    model.load_state_dict(states[-1])
    last = np.exp(forecast_after(model, logs, horizon)) - shifts[:, None]
    refit = {}
    if settings.get("refit"):
        # As the panel sweep's answer: trained again through the validation part for the chosen epoch count.
        model, states = fit(logs, horizon, season, settings, seed, best + 1)
        model.load_state_dict(states[-1])
        refit_forecast = np.exp(forecast_after(model, logs, horizon)) - shifts[:, None]
        refit = {i: refit_forecast[row].tolist() for row, i in enumerate(ids)}
    seconds = time.perf_counter() - started
    table = {i: test_forecast[row].tolist() for row, i in enumerate(ids)}
    table_last = {i: last[row].tolist() for row, i in enumerate(ids)}
    return {
        "dataset": dataset,
        "back": back,
        "seed": seed,
        "series": len(ids),
        "best_epoch": best + 1,
        "val_smape_best": round(val_scores[best], 3),
        "val_smape_last": round(val_scores[-1], 3),
        "test_best_epoch": scores(test, history, table, ids),
        "test_last_epoch": scores(test, history, table_last, ids),
        **({"test_refit": scores(test, history, refit, ids)} if refit else {}),
        "seconds": round(seconds, 1),
        "ids": ids,
        "forecast": refit or table,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="m3_quarterly")
    parser.add_argument("--back", type=int, default=1)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--no-baselines", action="store_true")
    args = parser.parse_args()
    settings = dict(SETTINGS)
    for pair in args.set:
        key, value = pair.split("=", 1)
        settings[key] = type(SETTINGS[key])(value) if not isinstance(SETTINGS[key], str) else value
    torch.set_num_threads(1)
    runs = [run(args.dataset, args.back, seed, args.epochs, settings) for seed in args.seeds]
    from inner_split import baselines, inner_panel, scores

    out = {"settings": settings, "runs": [{k: v for k, v in r.items() if k not in ("ids", "forecast")} for r in runs]}
    if len(runs) > 1:
        ids = runs[0]["ids"]
        mean = {i: np.mean([r["forecast"][i] for r in runs], axis=0).tolist() for i in ids}
        seen, horizon = inner_panel(args.dataset, None, back=args.back)
        history, test = seen.take(seen.lengths >= 2 * horizon + 2).split_last(horizon)
        out["mean_of_seeds"] = scores(test, history, mean, ids)
    if not args.no_baselines:
        seen, horizon = inner_panel(args.dataset, None, back=args.back)
        out["baselines"] = baselines(seen.take(seen.lengths >= 2 * horizon + 2), horizon, runs[0]["ids"])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
