"""Helpers the test modules share: reading a sweep's progress files while Tune may still be writing them, and a
trial slow enough for a fault to land in its middle."""

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


def trial_progress(experiment_path):
    """{trial folder: (last epoch, pid of its latest process)} for the trials that reported."""
    return {
        folder: (int(history["epoch"].iloc[-1]), int(history["pid"].iloc[-1]))
        for folder, history in trial_histories(experiment_path).items()
        if "pid" in history
    }


# A model slow enough (about 40 ms an epoch) for a fault to land in the middle of a trial.
SLOW_TRIAL = {"model": "GRU", "hidden_dim": 64, "n_rnn_layers": 2, "dropout": 0.1, "batch_size": 8}
