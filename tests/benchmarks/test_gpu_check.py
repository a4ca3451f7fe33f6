"""make gpu-check (benchmarks.gpu_check): the no-GPU path, the table and the exit status, without a GPU."""

from __future__ import annotations

from benchmarks import gpu_check
from benchmarks.gpu_check import Cell, cells_from_runs, failures, format_table
from joker.bench.records.record import MIB
from joker.bench.config.schema import resolve_trial


def run(method, dataset, budget_mib, status, reason="", **metrics):
    primary = "test_rmse" if dataset == "hepc" else "test_accuracy"
    return {"tags": {"method": method, "dataset": dataset, "budget": f"gpu-{budget_mib // 1024}g", "status": status,
                     "reason": reason, "primary_metric": primary},
            "metrics": metrics, "params": {"budget.gpu_bytes": str(budget_mib * MIB)}}


RUNS = [
    run("joker-inexact", "hepc", 2048, "ok", test_rmse=0.0335, fit_seconds=11.6, n_epochs=6, fit_gpu_mib=394.0),
    run("falkon", "hepc", 2048, "ok", test_rmse=0.0341, fit_seconds=30.2, fit_gpu_mib=2206.0),
    run("eigenpro3", "skin", 2048, "error", "AdapterError: upstream fit failed"),
    run("logfalkon", "hepc", 2048, "skipped", "logfalkon does not support task 'regression'"),
    run("joker-exact", "ijcnn1", 10240, "over_budget",
        "joker-exact: budget 'gpu-10g' (10240 MiB) cannot hold the smallest setting (...)"),
]


def test_no_gpu_says_so_and_exits_0(capsys):
    calls = []
    rc = gpu_check.main([], visible=lambda: (False, "no CUDA GPU visible (torch 2.13.0+cpu, CUDA build None)"),
                        run=calls.append)
    assert rc == 0 and calls == []
    assert capsys.readouterr().out == ("gpu-check: no CUDA GPU visible (torch 2.13.0+cpu, CUDA build None); "
                                       "nothing to check on this machine (run it on a machine with one GPU).\n")


def test_gpu_visible_on_this_machine_matches_torch():
    import torch

    ok, what = gpu_check.gpu_visible()
    assert ok == (torch.cuda.is_available() and torch.cuda.device_count() > 0)
    assert what


def test_cells_failures_and_table():
    cells = cells_from_runs(RUNS)
    assert [(c.dataset, c.method) for c in cells] == [
        ("hepc", "falkon"), ("hepc", "joker-inexact"), ("hepc", "logfalkon"), ("ijcnn1", "joker-exact"),
        ("skin", "eigenpro3")]
    joker = cells[1]
    assert joker == Cell("joker-inexact", "hepc", "gpu-2g", "ok", "", "test_rmse", 0.0335, 11.6, 6, 394.0, 2048.0)
    assert failures(cells) == [
        "falkon on hepc at gpu-2g: method GPU memory 2206 MiB > budget 2048 MiB",
        "eigenpro3 on skin at gpu-2g: error: AdapterError: upstream fit failed",
    ]
    table = format_table(cells).splitlines()
    assert table[0].split() == ["method", "dataset", "budget", "status", "metric", "fit", "s", "epochs", "method",
                                "GPU", "MiB", "budget", "MiB"]
    assert table[3].split() == ["joker-inexact", "hepc", "gpu-2g", "ok", "0.0335", "11.6", "6", "394", "2048"]
    assert "reasons:" in table


def test_main_exit_status_from_the_recorded_cells(monkeypatch, capsys):
    commands = []
    monkeypatch.setattr(gpu_check, "_latest_multirun", lambda uri: RUNS)
    rc = gpu_check.main(["mlflow.tracking_uri=sqlite:////tmp/x.db"], visible=lambda: (True, "H200, 140 GiB"),
                        run=lambda cmd: commands.append(cmd) or 0)
    assert rc == 1
    assert commands[0][1:] == ["-m", "joker.bench", "--config-name", "gpu-check", "mlflow.tracking_uri=sqlite:////tmp/x.db"]
    assert "FAILED: eigenpro3 on skin at gpu-2g" in capsys.readouterr().out
    monkeypatch.setattr(gpu_check, "_latest_multirun", lambda uri: RUNS[:1] + RUNS[3:])
    assert gpu_check.main([], visible=lambda: (True, "H200"), run=lambda cmd: 0) == 0
    assert gpu_check.main([], visible=lambda: (True, "H200"), run=lambda cmd: 1) == 2


def test_gpu_check_sweep_resolves_to_paper_cuda_trials():
    from hydra import compose, initialize_config_dir

    from joker.bench.config.paths import export_conf_env, sweeps_dir
    from joker.bench.config.schema import register_configs

    export_conf_env()
    register_configs()
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        spec = resolve_trial(compose("gpu-check", ["method=falkon", "dataset=skin", "budget=gpu-10g"]))
        inexact = resolve_trial(compose("gpu-check", ["method=joker-inexact"]))
    assert (str(spec.device), spec.scale, spec.method.dtype, spec.budget.gpu_bytes) == ("cuda", "paper", "float32",
                                                                                       10240 * MIB)
    assert spec.dataset.n_train is None  # the full split
    assert inexact.method.options["max_time"] == 20 and inexact.timeout_s == 120.0
