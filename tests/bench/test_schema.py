import re
"""Composition of the typed configs and their resolution into a trial spec."""

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf.errors import OmegaConfBaseException

from joker.bench.config.paths import conf_dir, export_conf_env, sweeps_dir
from joker.bench.config.schema import ConfigError, parse_sigma, register_configs, resolve_trial
from joker.bench.config.seeds import derive_seed

export_conf_env()
register_configs()

METHODS = ["joker-exact", "joker-inexact", "falkon", "logfalkon", "eigenpro3", "eigenpro4", "thundersvm", "libsvm",
           "ipm-lowrank", "sodm", "askotch", "torchkm"]


def _compose(name="smoke", overrides=()):
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        return compose(config_name=name, overrides=list(overrides))


def test_every_group_option_composes():
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        for ds in ("hepc", "higgs-head", "ijcnn1", "skin", "a9a", "msd", "susy", "higgs", "cifar5m"):
            for m in METHODS:
                spec = resolve_trial(compose("table4", [f"dataset={ds}", f"method={m}"]))
                assert spec.dataset.name == ds and spec.method.name == m
        for b in ("cpu-1g", "cpu-4g", "cpu-16g", "gpu-2g", "gpu-10g", "unlimited"):
            assert resolve_trial(compose("smoke", [f"budget={b}"])).budget.name == b


def test_group_listing_has_no_test_hooks():
    names = {p.stem for p in (conf_dir() / "method").glob("*.yaml")}
    assert names == set(METHODS)
    assert not any(p.name.startswith("_") for p in conf_dir().rglob("*.yaml"))


@pytest.mark.parametrize("override", [
    "dataset.sigmaa=1.0",            # misspelt key
    "budget.host_mib=lots",          # wrong type
    "dataset.task=regresion",        # not a Task
    "method.dtype=float16",          # not a DType
    "threads=two",
    "method=jokr-exact",             # no such option
])
def test_typos_and_wrong_types_are_rejected_at_compose_time(override):
    with pytest.raises((ConfigCompositionException, OmegaConfBaseException)):
        _compose("smoke", [override])


def test_sizes_follow_scale_and_explicit_sizes_win():
    spec = resolve_trial(_compose("smoke", ["dataset=hepc"]))
    assert (spec.dataset.n_train, spec.dataset.n_test) == (5000, 1000)
    spec = resolve_trial(_compose("table4", ["dataset=hepc"]))
    assert spec.scale == "local" and spec.dataset.n_train == 20000
    spec = resolve_trial(_compose("table4", ["dataset=hepc", "scale=paper"]))
    assert spec.dataset.n_train is None
    spec = resolve_trial(_compose("smoke", ["dataset=hepc", "dataset.n_train=123"]))
    assert spec.dataset.n_train == 123 and spec.dataset.n_test == 1000


def test_loss_defaults_per_task():
    assert resolve_trial(_compose("smoke", ["dataset=hepc", "method=joker-exact"])).method.loss == "squared"
    assert resolve_trial(_compose("smoke", ["dataset=higgs-head", "method=joker-exact"])).method.loss == "squared_hinge"
    assert resolve_trial(_compose("smoke", ["dataset=higgs-head", "method=libsvm"])).method.loss == "hinge"
    assert resolve_trial(_compose("smoke", ["dataset=hepc", "method=libsvm"])).method.loss == "epsilon_insensitive"
    assert resolve_trial(_compose("smoke", ["dataset=hepc", "method=logfalkon"])).method.loss is None
    assert resolve_trial(_compose("smoke", ["method=joker-exact", "method.loss=logistic"])).method.loss == "logistic"


def test_setting_precedence_method_dataset_sweep():
    cfg = _compose("smoke", [
        "method=joker-inexact",
        "+dataset.methods.joker-inexact.options.n_components=512",
        "+dataset.methods.joker-inexact.lam=0.5",
    ])
    spec = resolve_trial(cfg)
    # sweep-wide settings (smoke.yaml) win over the dataset's, which win over the method's
    assert spec.method.options["n_components"] == 1024
    assert spec.method.options["max_epochs"] == 20
    assert spec.method.options["tol"] == 1e-3
    assert spec.lam == 0.5


def test_unknown_setting_key_is_an_error():
    cfg = _compose("smoke", ["method=libsvm", "+settings.libsvm.optoins.C=1"])
    with pytest.raises(ConfigError, match="unknown keys"):
        resolve_trial(cfg)


def test_sigma_values():
    assert parse_sigma("median") == "median" and parse_sigma(2) == 2.0
    assert resolve_trial(_compose("smoke", ["dataset=a9a"])).sigma == "median"
    assert resolve_trial(_compose("smoke", ["dataset=hepc"])).sigma == 3.9086
    for bad in ("medain", -1.0, 0, float("nan"), True):
        with pytest.raises(ConfigError):
            parse_sigma(bad)


def test_seeds_derived_per_trial_and_shared_data_seed():
    a = resolve_trial(_compose("smoke", ["method=libsvm", "repetition=1", "seed=7"]))
    b = resolve_trial(_compose("smoke", ["method=joker-exact", "repetition=1", "seed=7"]))
    assert a.seed == derive_seed(7, "higgs-head", "libsvm", 1) != b.seed
    assert a.data_seed == b.data_seed == 8  # same rows for every method of a repetition
    assert derive_seed(0, "x", "y", 0) == derive_seed(0, "x", "y", 0)
    assert derive_seed(0, "x", "y", 0) != derive_seed(1, "x", "y", 0)


def test_table4_dataset_list_follows_scale():
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        cfg = compose("table4", overrides=[], return_hydra_config=True)
    assert cfg.hydra.sweeper.params.dataset == "hepc,higgs-head,ijcnn1,skin,a9a"
    assert set(cfg.hydra.sweeper.params.method.split(",")) == set(METHODS)
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        cfg = compose("table4", overrides=["scale=paper", "method=joker-exact"], return_hydra_config=True)
    assert cfg.hydra.sweeper.params.dataset == "hepc,msd,susy,higgs,cifar5m"
    spec = resolve_trial(cfg)
    assert spec.timeout_s == 14400 and spec.method.dtype == "float32"
    assert spec.threads == 8
    assert spec.dataset.n_train is None


def test_table4_full_scale_sweeps_both_cpu_budgets_on_full_splits():
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        cfg = compose("table4", overrides=["scale=full"], return_hydra_config=True)
    params = cfg.hydra.sweeper.params
    assert params.dataset == "hepc,higgs-head,ijcnn1,skin,a9a" and params.budget == "cpu-4g,cpu-16g"
    with initialize_config_dir(config_dir=str(sweeps_dir()), version_base="1.3"):
        local = compose("table4", overrides=[], return_hydra_config=True)
    assert local.hydra.sweeper.params.budget == "cpu-4g"
    for ds in ("hepc", "skin", "ijcnn1", "a9a", "higgs-head"):
        spec = resolve_trial(_compose("table4", ["scale=full", f"dataset={ds}", "method=joker-inexact",
                                                 "budget=cpu-16g"]))
        assert spec.dataset.n_train is None and spec.dataset.n_test is None  # the whole official split
        assert spec.timeout_s == 135 and spec.threads == 2 and spec.method.dtype == "float32"


def test_table4_full_scale_solves_the_l1_svc_and_gives_every_method_one_time_budget():
    """scale=full: joker-exact's binary loss is the hinge (LIBSVM's problem), regression keeps the squared loss;
    every method of a cell has the same timeout_s and no per-method time option; scale=local keeps the L2-SVC."""
    for ds, loss in (("skin", "hinge"), ("ijcnn1", "hinge"), ("hepc", "squared")):
        spec = resolve_trial(_compose("table4", ["scale=full", f"dataset={ds}", "method=joker-exact"]))
        assert spec.method.loss == loss
    assert resolve_trial(_compose("table4", ["dataset=skin", "method=joker-exact"])).method.loss == "squared_hinge"
    for scale in ("local", "full", "paper"):
        specs = [resolve_trial(_compose("table4", [f"scale={scale}", "dataset=hepc", f"method={m}"])) for m in METHODS]
        assert len({s.timeout_s for s in specs}) == 1, scale
        assert not [s.method.name for s in specs if "time_target_s" in s.method.options], scale


@pytest.mark.parametrize("override, text", [
    ("+settings.falkon.timeout_s=300", r"settings\[falkon\]\.timeout_s = 300 s differs from the cell's timeout_s = 135 s"),
    ("+dataset.methods.libsvm.timeout_s=60", r"dataset\.methods\[libsvm\]\.timeout_s = 60 s differs"),
    ("+settings.eigenpro3.options.time_target_s=20", r"settings\[eigenpro3\]\.options\.time_target_s = 20: a per-method"),
    ("+method.options.time_target_s=20", r"method \(falkon\)\.options\.time_target_s = 20"),
])
def test_a_method_given_another_time_budget_than_its_neighbours_is_refused(override, text):
    """Issue 40: one time budget per cell. A per-method timeout_s or time option is a config error, for every
    job of the sweep (the settings of *all* methods are checked, not only the job's): the sweep stops before
    its first trial."""
    for method in ("falkon", "joker-exact"):
        if override.startswith("+method.") and method != "falkon":
            continue
        cfg = _compose("table4", ["scale=full", "dataset=hepc", f"method={method}", override])
        with pytest.raises(ConfigError, match=text):
            resolve_trial(cfg)
    same = _compose("table4", ["scale=full", "dataset=hepc", "method=falkon", "+settings.falkon.timeout_s=135"])
    assert resolve_trial(same).timeout_s == 135.0   # the cell's own value restated is no other budget


def test_a_per_task_loss_overrides_only_its_tasks_and_bad_ones_are_config_errors():
    from joker.bench.config.schema import _check_setting, _merge

    assert _merge({"loss": "logistic"}, {"loss": {"regression": "squared"}})["loss"] == {
        "regression": "squared", "binary": "logistic", "multiclass": "logistic"}
    assert _merge({"loss": {"binary": "hinge"}}, {"loss": {"regression": "huber"}})["loss"] == {
        "binary": "hinge", "regression": "huber"}
    assert _merge({"loss": None}, {"loss": {"binary": "hinge"}})["loss"] == {"binary": "hinge"}
    for bad, text in (({"binnary": "hinge"}, "unknown tasks"), ({"binary": 3}, "loss name"), (3, "loss name")):
        with pytest.raises(ConfigError, match=text):
            _check_setting("settings[joker-exact]", {"loss": bad})


def test_table4_local_caps_falkon():
    spec = resolve_trial(_compose("table4", ["dataset=skin", "method=falkon"]))
    assert spec.method.options["M"] == 2000 and spec.timeout_s == 600


def test_trial_spec_is_typed_and_round_trips_through_json():
    from baselines.device import Device
    from joker.bench.records.identity import config_hash
    from joker.bench.config.spec import TrialSpec

    spec = resolve_trial(_compose("smoke", ["budget=cpu-1g", "budget.gpu_mib=2048", "device=cuda:1"]))
    assert spec.budget.host_bytes == 1024 * 2**20 and spec.budget.gpu_bytes == 2048 * 2**20
    assert spec.budget.host_kill_bytes == int(1.5 * 1024 * 2**20)
    assert spec.device == Device("cuda", 1) and spec.device.is_cuda and str(spec.device) == "cuda:1"
    back = TrialSpec.from_json(spec.to_json())
    assert back == spec and isinstance(back.device, Device)
    assert config_hash(back, "v") == config_hash(spec, "v") == config_hash(spec.to_dict(), "v")
    with pytest.raises(AttributeError):
        spec.lam = 2.0  # frozen
    with pytest.raises(ConfigError, match="keys"):
        TrialSpec.from_dict({**spec.to_dict(), "budget_mib": 1})


@pytest.mark.parametrize("override, message", [
    ("device=gpu", "device must be 'cpu', 'cuda' or 'cuda:<index>', got 'gpu'"),
    ("device=cuda:x", "got 'cuda:x'"),
    ("dataset.lam=0", "lam must be positive and finite, got 0.0"),
    ("dataset.lam=-1", "lam must be positive"),
    ("budget.host_mib=0", "budget.host_mib must be positive or null, got 0"),
    ("scale=huge", "scale='huge' is not one of dataset 'higgs-head''s scales ['full', 'local', 'paper', 'smoke']"),
    ("device=cuda", "device='cuda' needs a budget with gpu_mib (e.g. budget=gpu-2g); budget 'cpu-4g' has"),
    ("repetition=-1", "repetition must be >= 0, got -1"),
    ("seed=-3", "seed must be >= 0, got -3"),
])
def test_bad_device_lam_and_budget_are_config_errors(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_trial(_compose("smoke", [override]))


def test_a_scale_the_sweep_lacks_is_named_with_the_sweeps_scales():
    # table4 picks its datasets and limits from presets.<scale>: a typo was an interpolation error on presets.ful
    with pytest.raises(ConfigError, match=re.escape("scale='ful' is not one of this sweep's scales "
                                                    "['full', 'local', 'paper']")):
        resolve_trial(_compose("table4", ["scale=ful"]))


@pytest.mark.parametrize("override, message", [
    ("+lamm=1", "unknown key lamm (the keys of the config: budget, dataset, device, method, mlflow, presets, "
     "repetition, repetitions, rerun, scale, seed, settings, settings_file, settings_source, stop_larger_after, sweep, "
     "threads, timeout_s, tune, tuning)"),  # lam is dataset.lam
    ("+method.optoins.M=5", "unknown key method.optoins; did you mean method.options?"),
    ("+budget.host_mb=300", "unknown key budget.host_mb; did you mean budget.host_mib?"),
    ("+mlflow.experimant=x", "unknown key mlflow.experimant; did you mean mlflow.experiment?"),
    ("+dataset.sigmaa=1.0", "unknown key dataset.sigmaa; did you mean dataset.sigma?"),
])
def test_keys_added_with_plus_must_be_known_to_the_schema(override, message):
    with pytest.raises(ConfigError) as err:
        resolve_trial(_compose("smoke", [override]))
    assert str(err.value).startswith(message)


def test_free_form_mappings_still_take_new_keys():
    spec = resolve_trial(_compose("smoke", ["+method.options.M=5", "+settings.falkon.options.M=7"]))
    assert spec.method.options["M"] == 5


def test_task_metrics_are_what_scoring_returns():
    import numpy as np

    from joker.bench.trials import scoring

    y = np.array([0.0, 1.0, 1.0, 0.0])
    reg = scoring.regression_metrics(y, y + 0.5)
    assert set(reg) == set(scoring.TASK_METRICS["regression"]) and reg["test_rmse"] == 0.5
    cls = scoring.classification_metrics(y, y, scores=y)
    assert set(cls) == set(scoring.TASK_METRICS["binary"]) and cls["test_accuracy"] == 1.0
    y3 = np.array([0, 1, 2, 1])
    multi = scoring.classification_metrics(y3, y3, scores=np.eye(3)[y3])
    assert set(multi) == set(scoring.TASK_METRICS["multiclass"]) and multi["test_auc"] == 1.0


@pytest.mark.parametrize("override, message", [
    ("dataset.primary_metric=test_acc", "dataset.primary_metric='test_acc' is not a metric of a regression task; "
     "one of test_rmse, test_mse, test_rel_error"),
    ("dataset.primary_metric=test_accuracy", "dataset.primary_metric='test_accuracy' is not a metric of a "
     "regression task; one of test_rmse, test_mse, test_rel_error"),
])
def test_primary_metric_must_be_one_the_task_reports(override, message):
    with pytest.raises(ConfigError) as err:
        resolve_trial(_compose("smoke", ["dataset=hepc", override]))
    assert str(err.value) == message
