"""The seasonal adjustment of `deseasonalise` (forecaster.features.transforms): each series' seasonal indices (or
shifts) from
its training part, by a classical decomposition of each season the data's frequency nests in the first (the day, then
the week, of hourly data: one table of the week's places), and the year of daily data, which no table of places holds.

A year of days is 365.2425 points, not a whole number of weeks: its profile is a smooth function of the time of year
instead, each series' own, as Prophet's yearly seasonality and MSTL's smoothed seasonal component make it: a Fourier
series of YEAR_HARMONICS harmonics of the time of year, fit by least squares to what the week's indices left, less
its centred moving average of a year. A series divided by its week's indices is divided by the year's too (the fit
is of the log of its ratio to the trend, so that the profile stays above 0); one less its week's shifts is less the
year's (the fit is of the difference). The year is taken where a series' training part holds two years (one of
values the moving average leaves) and the harmonics explain them beyond noise: an F test at the 0.1 % level, as
X-11's test takes the week. docs/design-notes.md, "Covariates and the calendar", measures it.
"""

from __future__ import annotations

import math

import numpy as np

from forecaster.data.panel import Panel
from forecaster.data.seasons import nested_seasons
from forecaster.features.step_inputs import DAY_NS, YEAR_NS, step_ns

YEAR_HARMONICS = 10
"""The year's profile: sines and cosines of 1 to 10 times the time of year, as Prophet's yearly seasonality."""
YEAR_POINTS = 365
"""The centred moving average that takes the trend out before the year's profile is fit: a year of days."""


def seasonal_components(train: Panel, first_only: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(S, P) each series' multiplicative seasonal indices from its training part (as forecaster.features.transforms'
    docstring tells), and (S, P) its additive shifts, or None where no series has any; P is the longest of the data's
    nested seasons (forecaster.data.seasons.nested_seasons: the week of hourly data, else the season). Each season is
    taken
    in turn, shortest first, from what the shorter ones left, where the part holds 3 of its cycles and Theta's test
    finds it, and the tables multiply (add, for shifts) into one. Indices of 1 and shifts of 0 where no season is
    found or the part is too short; a seasonal series whose indices are undefined (a value below 0, a trend not above
    0 everywhere, a place in the season that would get an index of 0: a month that is always 0) gets shifts instead:
    its mean difference from the trend at each place, centred. `first_only`: the first season's table alone, (S,
    season), for what holds one place per point of the season (the hybrid's smoothing factors). The year of daily
    data is year_components'."""
    seasons = (train.season,) if first_only else nested_seasons(train.freq, train.season)
    period = seasons[-1]
    indices, shifts = np.ones((len(train), period)), np.zeros((len(train), period))
    phases = train.phases(np.arange(len(train.values)), period)
    for series in range(len(train)):
        rows = slice(train.offsets[series], train.offsets[series + 1])
        values, places = train.values[rows], phases[rows]
        divide = None  # decided by the first season found: divided throughout, or shifted throughout
        for season in seasons:
            if len(values) < 3 * season:
                continue
            if not (_seasonal(values, season) if season == seasons[0] else _stable_season(values, places, season)):
                continue
            table, divided = _seasonal_table(values, places % season, season, divide)
            if table is None:
                continue
            divide = divided
            whole = table[np.arange(period) % season]
            if divided:
                indices[series] *= whole
                values = values / whole[places]
            else:
                shifts[series] += whole
                values = values - whole[places]
    return indices, (shifts if shifts.any() else None)


def _trend_weights(season: int) -> np.ndarray:
    """The centred moving average of a season's length (2 x m for an even m)."""
    return np.r_[0.5, np.ones(season - 1), 0.5] / season if season % 2 == 0 else np.ones(season) / season


def _stable_season(values: np.ndarray, places: np.ndarray, season: int) -> bool:
    """X-11's test for stable seasonality, for a season longer than the first (what the first left: the week of
    hourly data): the values less their centred moving average differ by place in the season beyond noise, by an
    analysis of variance at the 0.1 % level (the F point by Paulson's approximation). Theta's test does not serve
    there: over hundreds of lags, the sum of the squared autocorrelations raises its bar above any season's."""
    trend = np.convolve(values, _trend_weights(season), mode="valid")
    detrended = values[season // 2 : season // 2 + len(trend)] - trend
    places = places[season // 2 : season // 2 + len(trend)] % season
    counts = np.bincount(places, minlength=season)
    means = np.bincount(places, detrended, season) / counts
    between = counts @ (means - detrended.mean()) ** 2 / (season - 1)
    within_sum = ((detrended - means[places]) ** 2).sum()
    if within_sum == 0:
        return bool(between > 0)
    return _beyond_noise(between / (within_sum / (len(detrended) - season)), season - 1, len(detrended) - season)


def _beyond_noise(ratio: float, first: int, second: int) -> bool:
    """Whether an F ratio of (first, second) degrees of freedom lies beyond its 0.1 % point (Paulson's
    approximation of the F distribution by a normal one)."""
    cube = ratio ** (1 / 3)
    z = ((1 - 2 / (9 * second)) * cube - (1 - 2 / (9 * first))) / math.sqrt(
        2 / (9 * first) + cube**2 * 2 / (9 * second)
    )
    return bool(z > 3.090)


def _seasonal_table(
    values: np.ndarray, places: np.ndarray, season: int, divide: bool | None
) -> tuple[np.ndarray | None, bool]:
    """One season's classical decomposition: (season,) indices (True) where `divide` allows and they are defined,
    else shifts (False) where `divide` allows; (None, divide) where neither may be taken."""
    half = season // 2
    trend = np.convolve(values, _trend_weights(season), mode="valid")  # centred: trend[k] belongs to point k + half
    places = places[half : half + len(trend)]
    counts = np.bincount(places, minlength=season)
    centre = values[half : half + len(trend)]
    if divide is not False and values.min() >= 0 and trend.min() > 0:
        mean_ratio = np.bincount(places, centre / trend, season) / counts
        if mean_ratio.min() > 0:
            return mean_ratio / mean_ratio.mean(), True
    if divide is True:
        return None, True
    mean_difference = np.bincount(places, centre - trend, season) / counts
    return mean_difference - mean_difference.mean(), False


def _seasonal(values: np.ndarray, season: int) -> bool:
    """The Theta method's test: the autocorrelation at the season beyond 1.645 of its standard error (Bartlett)."""
    centred = values - values.mean()
    variance = centred @ centred
    if variance == 0:
        return False
    acf = np.array([centred[lag:] @ centred[: len(values) - lag] for lag in range(1, season + 1)]) / variance
    return bool(abs(acf[-1]) > 1.645 * math.sqrt((1 + 2 * np.sum(acf[:-1] ** 2)) / len(values)))


def year_components(train: Panel, indices: np.ndarray, shifts: np.ndarray | None) -> np.ndarray | None:
    """(S, 2, 2 YEAR_HARMONICS): each series' year (the module's docstring) from its training part, after its
    `indices` and `shifts` (seasonal_components'), as the coefficients of its log factors ([:, 0]) and of its shifts
    ([:, 1]), 0 where it has none; None where the data is not daily or no series has a year."""
    if step_ns(train.freq) != DAY_NS or not train.dated:
        return None
    period = indices.shape[1]
    phases = train.phases(np.arange(len(train.values)), period)
    times = train.times.astype("datetime64[ns]").astype(np.int64)
    year = np.zeros((len(train), 2, 2 * YEAR_HARMONICS))
    for series in range(len(train)):
        rows = slice(train.offsets[series], train.offsets[series + 1])
        values, places = train.values[rows], phases[rows]
        if len(values) < 2 * YEAR_NS / DAY_NS:
            continue
        divided = (indices[series] != 1).any()
        shifted = shifts is not None and (shifts[series] != 0).any()
        less = shifts[series][places] if shifts is not None and shifted else 0.0
        adjusted = (values - less) / indices[series][places]
        for divide in (True,) if divided else (False,) if shifted else (True, False):
            coefficients = _year_profile(adjusted, times[rows], divide)
            if coefficients is not None:
                year[series, 0 if divide else 1] = coefficients
                break
    return year if year.any() else None


def year_at(year: np.ndarray, rows: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(factor, shift) of the year's profile at `times` (int64 ns) of the series at `rows` of `year` (broadcast
    together): what a point is divided by, after what is subtracted from it."""
    basis = year_basis(times)
    coefficients = year[rows]  # (..., 2, 2K)
    factor = np.exp(np.einsum("...k,...k->...", basis, coefficients[..., 0, :]))
    shift = np.einsum("...k,...k->...", basis, coefficients[..., 1, :])
    return factor, shift


def year_basis(times: np.ndarray) -> np.ndarray:
    """(..., 2 YEAR_HARMONICS): the sine and cosine of k times each time's angle in the year (int64 ns; a year of
    365.2425 days), k = 1, ..., YEAR_HARMONICS."""
    angle = 2 * math.pi * np.mod(np.asarray(times, dtype=np.int64), YEAR_NS) / YEAR_NS
    multiples = angle[..., None] * np.arange(1, YEAR_HARMONICS + 1)
    return np.concatenate([np.sin(multiples), np.cos(multiples)], axis=-1)


def _year_profile(values: np.ndarray, times: np.ndarray, divide: bool) -> np.ndarray | None:
    """(2 YEAR_HARMONICS,) a series' year: the least-squares harmonics of its log ratio to (`divide`), or difference
    from, its centred moving average of a year; None where `divide` is undefined (a value or trend at or below 0) or
    the harmonics explain no more than noise does."""
    trend = np.convolve(values, np.ones(YEAR_POINTS) / YEAR_POINTS, mode="valid")
    half = YEAR_POINTS // 2
    centre = values[half : half + len(trend)]
    if divide:
        if centre.min() <= 0 or trend.min() <= 0:
            return None
        detrended = np.log(centre / trend)
    else:
        detrended = centre - trend
    basis = year_basis(times[half : half + len(trend)])
    design = np.column_stack([np.ones(len(detrended)), basis])
    solution, *_ = np.linalg.lstsq(design, detrended, rcond=None)
    residual = ((detrended - design @ solution) ** 2).sum()
    explained = ((detrended - detrended.mean()) ** 2).sum() - residual
    first, second = basis.shape[1], len(detrended) - design.shape[1]
    if residual == 0:
        return solution[1:] if explained > 0 else None
    return solution[1:] if _beyond_noise(explained / first / (residual / second), first, second) else None
