import csv
from joker.bench.records.tracking import write_history_csv

def test_history_csv_expands_per_output_lists(tmp_path):
    p = tmp_path / "h.csv"
    assert write_history_csv([{"epoch": 1, "gap": 0.5, "gaps": [0.5, 0.25]}, {"epoch": 2, "gap": 0.1, "gaps": [0.1, 0.05]}], p)
    rows = list(csv.DictReader(open(p)))
    assert list(rows[0]) == ["epoch", "gap", "gaps_0", "gaps_1"]
    assert [float(r["gaps_1"]) for r in rows] == [0.25, 0.05]
    assert not write_history_csv([], tmp_path / "e.csv")
