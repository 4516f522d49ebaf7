"""Reading the trials' progress.csv files of a sweep while Tune may still be writing them."""

import glob
import os

import pandas as pd


def trial_histories(experiment_path) -> dict[str, pd.DataFrame]:
    """{trial folder: the rows it has reported so far}, for every trial that has reported an epoch."""
    histories = {}
    for path in glob.glob(f"{experiment_path}/*/progress.csv"):
        try:
            history = pd.read_csv(path)
        except (pd.errors.EmptyDataError, pd.errors.ParserError):
            continue  # caught mid-write: the next look will have it
        if len(history) and "epoch" in history:
            histories[os.path.dirname(path)] = history
    return histories
