"""docs/notebook.ipynb, executed as a user runs it (a Jupyter kernel of this Python, in a folder of its own), on the
smoke budget: the DataFrame-first API end to end, a real sweep on a real Ray."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from sweeps import PlanError, SweepForecaster
from sweeps.notebook import NotFittedError

NOTEBOOK = Path(__file__).resolve().parent.parent / "docs" / "notebook.ipynb"


def text_of(cell) -> str:
    """What a cell showed: its printed text and its result's plain text."""
    found = []
    for output in cell.get("outputs", []):
        found.append(output.get("text", ""))
        found.append(output.get("data", {}).get("text/plain", ""))
    return "".join(found)


@pytest.mark.slow
def test_the_notebook_fits_predicts_saves_and_refuses_a_gap_on_the_smoke_budget(tmp_path):
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    parameters = next(i for i, cell in enumerate(notebook.cells) if "parameters" in cell.metadata.get("tags", []))
    notebook.cells.insert(parameters + 1, nbformat.v4.new_code_cell("budget = dict(smoke_test=True)"))
    NotebookClient(
        notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    board, forecast, again, refused = (text_of(cell) for cell in code[-4:])
    assert "answer (the ensemble)" in board and "mean of the nets" in board and "seasonal naive" in board
    assert "answer-lo-95" in forecast and "answer-hi-95" in forecast and "shop0" in forecast
    assert again.strip() == "True"  # the saved model, loaded, forecasts what the fitted one did
    assert "series 'shop0'" in refused and "gap" in refused and "row 11" in refused
    assert (tmp_path / "shop-model" / "model.json").exists() and list((tmp_path / "results").glob("panel-*"))


def test_known_ahead_columns_need_their_future_values_before_any_sweep_starts():
    """The fit ends by forecasting the future, which reads the known-ahead columns there: said before Ray starts."""
    with pytest.raises(PlanError, match=r"futr_exog_list=\['promo'\].*give futr_df"):
        SweepForecaster(h=6, futr_exog_list=["promo"]).fit(None)
    with pytest.raises(NotFittedError, match=r"fit\(df\) first"):
        SweepForecaster(h=6).predict()
