"""The dataset registry: where each dataset comes from and how it is split.

Each :class:`DatasetSpec` records the publisher's files (with the URLs to
try, in order), the parser for their official layout, the paper's split
and every preprocessing choice, in words, in ``notes``. Nothing here
imports numpy: ``import joker.data`` stays fast.

Split kinds
-----------
``"files"``
    The publisher's own train and test files (LIBSVM ``.t`` files,
    CIFAR-5M parts).
``"range"``
    One file in its published row order: the first ``n_train`` rows train,
    the rest test (MSD, SUSY, HIGGS, the HIGGS head).
``"permutation"``
    One file, rows permuted with ``numpy.random.default_rng(split_seed)
    .permutation(n)``; the first ``floor(train_fraction * n)`` rows of that
    order train, the rest test (HEPC, Skin, covtype). Subsets take the
    first ``n_train`` rows of the order for training and the *next*
    ``n_test`` rows for testing, which is how the anchors' HEPC subset
    ("first 200,000 train, next 50,000 test") is defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .errors import UnknownDatasetError

__all__ = [
    "Source",
    "FileSpec",
    "DatasetSpec",
    "REGISTRY",
    "get_spec",
    "list_datasets",
    "register",
]

TASKS = ("regression", "binary", "multiclass")
SPLITS = ("files", "range", "permutation")

UCI_STATIC = "https://archive.ics.uci.edu/static/public"
UCI_LEGACY = "https://archive.ics.uci.edu/ml/machine-learning-databases"
LIBSVM_BINARY = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary"
CIFAR5M_BASE = "https://storage.googleapis.com/gresearch/cifar5m"


@dataclass(frozen=True)
class Source:
    """One URL a file can be downloaded from.

    Parameters
    ----------
    url : str
        HTTP(S) URL.
    member : str, optional
        When the URL serves a zip archive that wraps the file (UCI's
        ``static/public/<id>/<name>.zip``), the archive member to extract.
        The extracted member is the file kept; the archive is deleted.
    """

    url: str
    member: str | None = None

    @property
    def filename(self) -> str:
        """str: the local file name this source produces."""
        return self.member or self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclass(frozen=True)
class FileSpec:
    """One publisher file of a dataset.

    Parameters
    ----------
    role : {"train", "test", "all"}
        Which part of the split the file holds (``"all"`` for ``range`` and
        ``permutation`` splits).
    names : tuple of str
        Local file names accepted for this file (official name first, then
        compressed or uncompressed variants). Mirrors are searched for each.
    sources : tuple of Source
        URLs to try, in order. Empty for mirror-only files.
    sha256 : mapping of str to str
        Published or well-established sha256 of the official file, by local
        name. Checked after every download and for any local copy.
    mirror_sha256 : mapping of str to str
        sha256 of the copies in the project's shared mirror (which may be
        re-compressed or rebuilt); checked for mirror copies only.
    mirror_dir : str
        Sub-folder of a mirror where the file usually lives (a hint; the
        mirror root and its direct sub-folders are searched too).
    """

    role: str
    names: tuple
    sources: tuple = ()
    sha256: Mapping[str, str] = field(default_factory=dict)
    mirror_sha256: Mapping[str, str] = field(default_factory=dict)
    mirror_dir: str = ""

    @property
    def name(self) -> str:
        """str: the canonical (first) local name."""
        return self.names[0]

    @property
    def urls(self) -> tuple:
        """tuple of str: the URLs to try, in order."""
        return tuple(s.url for s in self.sources)


@dataclass(frozen=True)
class DatasetSpec:
    """Everything needed to obtain, parse, split and preprocess a dataset.

    Parameters
    ----------
    name : str
        Registry key, lower case (``"hepc"``, ``"covtype-binary"``).
    title : str
        Human name and publisher.
    task : {"regression", "binary", "multiclass"}
        Learning task.
    n_features : int
        Number of input features after parsing (``d``).
    files : tuple of FileSpec
        The publisher's files.
    parser : str
        Key of the parser in :data:`joker.data.parsers.PARSERS`.
    parser_options : mapping
        Keyword arguments for the parser (delimiter, columns, ...).
    split : {"files", "range", "permutation"}
        Split kind (module docstring).
    n_train, n_test : int
        Expected official split sizes (``range``: ``n_train`` is the split
        point; ``permutation``: the sizes for the expected file, computed
        again from the parsed row count at load time).
    train_fraction : float, optional
        ``permutation`` splits only.
    split_seed : int
        Seed of the ``permutation`` split that the paper and the anchors use.
    n_classes : int, optional
        Number of classes for classification tasks.
    label_map : mapping, optional
        Raw label value -> task label (binary: -1.0 / +1.0). Any other raw
        value is a parse error.
    store_dtype : str
        dtype of X in the array cache (the published precision).
    streamable : bool
        True for big gzip CSVs where a ``subset="head"`` load without a
        cache streams only the rows it needs.
    uci_id : int, optional
        UCI repository id.
    homepage, licence : str
        Provenance.
    notes : str
        The preprocessing and split choices, in words (shown by ``info``).
    prep_version : int
        Bumped when this entry's parsing or feature construction changes;
        part of the cache key.
    """

    name: str
    title: str
    task: str
    n_features: int
    files: tuple
    parser: str
    split: str
    n_train: int
    n_test: int
    parser_options: Mapping[str, object] = field(default_factory=dict)
    train_fraction: float | None = None
    split_seed: int = 0
    n_classes: int | None = None
    label_map: Mapping[float, float] | None = None
    store_dtype: str = "float64"
    streamable: bool = False
    uci_id: int | None = None
    homepage: str = ""
    licence: str = ""
    notes: str = ""
    prep_version: int = 1

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"{self.name}: task must be one of {TASKS}")
        if self.split not in SPLITS:
            raise ValueError(f"{self.name}: split must be one of {SPLITS}")
        if self.split == "permutation" and not self.train_fraction:
            raise ValueError(f"{self.name}: permutation split needs train_fraction")

    @property
    def roles(self) -> tuple:
        """tuple of str: the roles present, train before test."""
        order = ("all", "train", "test")
        present = {f.role for f in self.files}
        return tuple(r for r in order if r in present)


REGISTRY: dict[str, DatasetSpec] = {}


def register(spec: DatasetSpec) -> DatasetSpec:
    """Add a dataset to the registry.

    Parameters
    ----------
    spec : DatasetSpec

    Returns
    -------
    DatasetSpec
        The same spec.

    Raises
    ------
    ValueError
        If the name is taken.
    """
    if spec.name in REGISTRY:
        raise ValueError(f"dataset {spec.name!r} is already registered")
    REGISTRY[spec.name] = spec
    return spec


def get_spec(name: str) -> DatasetSpec:
    """Look a dataset up by name.

    Parameters
    ----------
    name : str
        Registry name, case-insensitive; ``_`` and ``-`` are equivalent.

    Returns
    -------
    DatasetSpec

    Raises
    ------
    UnknownDatasetError
        If no dataset has that name (the message lists the known names).
    """
    key = str(name).strip().lower().replace("_", "-")
    try:
        return REGISTRY[key]
    except KeyError:
        raise UnknownDatasetError(name, REGISTRY) from None


def list_datasets(task: str | None = None) -> list:
    """Names of the registered datasets, in registry order.

    Parameters
    ----------
    task : {"regression", "binary", "multiclass"}, optional
        Keep only datasets of this task.

    Returns
    -------
    list of str
    """
    return [n for n, s in REGISTRY.items() if task is None or s.task == task]


def _uci(uci_id: int, slug: str, member: str, legacy: str) -> tuple:
    """UCI's current archive URL (with the member to extract), then the legacy one."""
    return (
        Source(f"{UCI_STATIC}/{uci_id}/{slug}.zip", member=member),
        Source(f"{UCI_LEGACY}/{uci_id:05d}/{legacy}"),
    )


_BINARY_01 = {0.0: -1.0, 1.0: 1.0}
_BINARY_PM = {-1.0: -1.0, 1.0: 1.0}

# ---------------------------------------------------------------- the paper's five

register(DatasetSpec(
    name="msd",
    title="YearPredictionMSD (Million Song Dataset subset), UCI id 203",
    task="regression",
    n_features=90,
    files=(FileSpec(
        role="all",
        names=("YearPredictionMSD.txt.zip", "YearPredictionMSD.txt"),
        sources=_uci(203, "yearpredictionmsd", "YearPredictionMSD.txt",
                     "YearPredictionMSD.txt.zip"),
        mirror_dir="uci",
    ),),
    parser="csv",
    parser_options={"delimiter": ",", "n_columns": 91, "label_column": 0},
    split="range", n_train=463_715, n_test=51_630,
    store_dtype="float64",
    uci_id=203,
    homepage="https://archive.ics.uci.edu/dataset/203/yearpredictionmsd",
    licence="CC BY 4.0",
    notes=(
        "Comma-separated, year first then 90 timbre features (12 averages, "
        "78 covariances). Split: the publisher's, first 463,715 rows train, "
        "last 51,630 test (no artist in both). Target: the raw release year "
        "(1922-2011) as float, not centred, as in the Falkon/Joker papers' "
        "relative-error metric. X standardised with train statistics."
    ),
))

register(DatasetSpec(
    name="hepc",
    title="Individual household electric power consumption, UCI id 235",
    task="regression",
    n_features=10,
    files=(FileSpec(
        role="all",
        names=("household_power_consumption.zip", "household_power_consumption.txt"),
        sources=_uci(235, "individual+household+electric+power+consumption",
                     "household_power_consumption.txt",
                     "household_power_consumption.zip"),
        mirror_sha256={"household_power_consumption.zip":
                       "519956d2989dcbe0617cffc4fef5fb59235451dd6d5e86227b9522743014d01a"},
        mirror_dir="hepc",
    ),),
    parser="hepc",
    split="permutation", train_fraction=0.9, split_seed=0,
    n_train=1_844_332, n_test=204_926,
    store_dtype="float64",
    uci_id=235,
    homepage="https://archive.ics.uci.edu/dataset/235/individual+household+electric+power+consumption",
    licence="CC BY 4.0",
    notes=(
        "';'-separated minutes, header 'Date;Time;Global_active_power;...'. "
        "Rows with any '?' are dropped (UCI's missing minutes). Target: raw "
        "Global_active_power in kW. Features (d=10): the 6 other measurements "
        "(Global_reactive_power kW, Voltage V, Global_intensity A, "
        "Sub_metering_1..3 Wh) + sin/cos(2 pi t/24h) of the time of day + "
        "sin/cos(2 pi w/7) of the day of week (w = 0 Monday .. 6 Sunday): "
        "cyclic encodings keep 23:59 next to 00:00 and Sunday next to Monday, "
        "and drop the calendar date, so the task is a regression of load on "
        "the other meters and the time, not a memorised time series. "
        "Split: default_rng(0).permutation of the complete rows, first 90% "
        "train, last 10% test (the paper's random 90/10). The anchors' subset "
        "is load_dataset('hepc', n_train=200000, n_test=50000): the first "
        "200,000 rows of that same permutation train, the next 50,000 test. "
        "The shared mirror's zip is a rebuild (26,001 '?' rows; UCI's has "
        "25,979), so its sha256 is recorded as a mirror sum only."
    ),
))

register(DatasetSpec(
    name="susy",
    title="SUSY, UCI id 279",
    task="binary",
    n_features=18,
    files=(FileSpec(
        role="all",
        names=("SUSY.csv.gz", "SUSY.csv"),
        sources=_uci(279, "susy", "SUSY.csv.gz", "SUSY.csv.gz"),
        mirror_dir="uci",
    ),),
    parser="csv",
    parser_options={"delimiter": ",", "n_columns": 19, "label_column": 0},
    split="range", n_train=4_000_000, n_test=1_000_000,
    n_classes=2, label_map=_BINARY_01,
    store_dtype="float32", streamable=True,
    uci_id=279,
    homepage="https://archive.ics.uci.edu/dataset/279/susy",
    licence="CC BY 4.0",
    notes=(
        "Comma-separated, label (1.0 signal / 0.0 background) first, then 8 "
        "low-level + 10 high-level features, published in float32 precision "
        "(kept as float32). Labels 1 -> +1, 0 -> -1. Split: the paper's, "
        "first 4,000,000 rows train, last 1,000,000 test."
    ),
))

register(DatasetSpec(
    name="higgs",
    title="HIGGS, UCI id 280",
    task="binary",
    n_features=28,
    files=(FileSpec(
        role="all",
        names=("HIGGS.csv.gz", "HIGGS.csv"),
        sources=_uci(280, "higgs", "HIGGS.csv.gz", "HIGGS.csv.gz"),
        sha256={"HIGGS.csv.gz":
                "ea302c18164d4e3d916a1e2e83a9a8d07069fa6ebc7771e4c0540d54e593b698"},
        mirror_dir="higgs",
    ),),
    parser="csv",
    parser_options={"delimiter": ",", "n_columns": 29, "label_column": 0},
    split="range", n_train=8_800_000, n_test=2_200_000,
    n_classes=2, label_map=_BINARY_01,
    store_dtype="float32", streamable=True,
    uci_id=280,
    homepage="https://archive.ics.uci.edu/dataset/280/higgs",
    licence="CC BY 4.0",
    notes=(
        "Comma-separated, label (1.0 signal / 0.0 background) first, then 21 "
        "low-level + 7 high-level features in float32 precision (kept as "
        "float32). Labels 1 -> +1, 0 -> -1. Split: the paper's, first "
        "8,800,000 rows train, last 2,200,000 test (UCI's own test set is the "
        "last 500,000, inside ours)."
    ),
))

register(DatasetSpec(
    name="higgs-head",
    title="HIGGS, its first 7,500 rows (shared mirror only)",
    task="binary",
    n_features=28,
    files=(FileSpec(
        role="all",
        names=("HIGGS.head7500.csv.gz",),
        sources=(),
        mirror_sha256={"HIGGS.head7500.csv.gz":
                       "bf83e6f05f5f80a3e222274e0036c2f83a5f1d2db52df4e50d7776032715054a"},
        mirror_dir="higgs",
    ),),
    parser="csv",
    parser_options={"delimiter": ",", "n_columns": 29, "label_column": 0},
    split="range", n_train=6_000, n_test=1_500,
    n_classes=2, label_map=_BINARY_01,
    store_dtype="float64",
    uci_id=280,
    homepage="https://archive.ics.uci.edu/dataset/280/higgs",
    licence="CC BY 4.0",
    notes=(
        "The first 7,500 rows of HIGGS.csv.gz in its layout (values rounded to "
        "3 decimals); not downloadable: make it with "
        "`zcat HIGGS.csv.gz | head -n 7500 | gzip`. Labels 1 -> +1, 0 -> -1. "
        "Split: first 6,000 rows train, last 1,500 test."
    ),
))

register(DatasetSpec(
    name="cifar5m",
    title="CIFAR-5M (Nakkiran, Neyshabur, Sedghi 2021)",
    task="multiclass",
    n_features=3072,
    files=tuple(
        FileSpec(
            role="train" if i < 4 else "test",
            names=(f"part{i}.npz",),
            sources=(Source(f"{CIFAR5M_BASE}/part{i}.npz"),),
            mirror_dir="cifar5m",
        )
        for i in range(5)
    ),
    parser="cifar5m",
    split="files", n_train=4_001_792, n_test=1_000_448,
    n_classes=10,
    store_dtype="uint8",
    homepage="https://github.com/preetum/cifar5m",
    licence="see the publisher's page",
    notes=(
        "npz parts with X uint8 (N, 32, 32, 3) and Y int (N,), classes 0-9. "
        "Split: the paper's, parts 0-3 train, part 4 test (part 5 unused). "
        "Inputs: the raw 3,072 pixels flattened in (row, column, channel) "
        "order, stored as uint8, standardised per pixel with train statistics "
        "at load time. Labels stay integer class ids (int64)."
    ),
))

# ------------------------------------------------------------- LIBSVM binary sets


def _libsvm(role: str, names: tuple, mirror_sums: dict | None = None) -> FileSpec:
    """A file of the LIBSVM binary datasets page (first name = the site's name)."""
    return FileSpec(
        role=role,
        names=names,
        sources=(Source(f"{LIBSVM_BINARY}/{names[0]}"),),
        mirror_sha256=mirror_sums or {},
        mirror_dir="libsvm",
    )


_LIBSVM_NOTE = (
    "LIBSVM text, 1-based indices, read with scikit-learn's svmlight reader "
    "and densified. "
)

register(DatasetSpec(
    name="a9a",
    title="a9a (UCI Adult), LIBSVM binary",
    task="binary",
    n_features=123,
    files=(
        _libsvm("train", ("a9a", "a9a.bz2"), {"a9a.bz2": "1dcb2b4aedea0b5a9e964192dd211675d16cf05ab6477ddd0702d87c1d1af8da"}),
        _libsvm("test", ("a9a.t", "a9a.t.bz2"), {"a9a.t.bz2": "e55725b53c3c47f7053bd3ef12e41555539eac4c0fe989e69345cc4dd0ea6e8d"}),
    ),
    parser="libsvm",
    parser_options={"n_features": 123},
    split="files", n_train=32_561, n_test=16_281,
    n_classes=2, label_map=_BINARY_PM,
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#a9a",
    licence="CC BY 4.0 (UCI Adult)",
    notes=_LIBSVM_NOTE + (
        "123 binary features; a9a.t never uses feature 123, so both files are "
        "read with n_features=123. Labels -1/+1 kept. Split: the official "
        "a9a / a9a.t files."
    ),
))

register(DatasetSpec(
    name="ijcnn1",
    title="ijcnn1 (IJCNN 2001 challenge), LIBSVM binary",
    task="binary",
    n_features=22,
    files=(
        _libsvm("train", ("ijcnn1.bz2", "ijcnn1"), {"ijcnn1.bz2": "b38a4198ce142d43e96fb86d17b87211feec1f909ac344fa057455c69de29de3"}),
        _libsvm("test", ("ijcnn1.t.bz2", "ijcnn1.t"), {"ijcnn1.t.bz2": "acd1db430684fdd3f0c768ecc49aa8e749d0004fc117611220c2aa576a7b6a24"}),
    ),
    parser="libsvm",
    parser_options={"n_features": 22},
    split="files", n_train=49_990, n_test=91_701,
    n_classes=2, label_map=_BINARY_PM,
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#ijcnn1",
    notes=_LIBSVM_NOTE + (
        "22 features. Labels -1/+1 kept. Split: the official ijcnn1 / "
        "ijcnn1.t files (the LIBSVM page's 'ijcnn1.val' is not used)."
    ),
))

register(DatasetSpec(
    name="cod-rna",
    title="cod-rna, LIBSVM binary",
    task="binary",
    n_features=8,
    files=(
        _libsvm("train", ("cod-rna",)),
        _libsvm("test", ("cod-rna.t",)),
    ),
    parser="libsvm",
    parser_options={"n_features": 8},
    split="files", n_train=59_535, n_test=271_617,
    n_classes=2, label_map=_BINARY_PM,
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#cod-rna",
    notes=_LIBSVM_NOTE + (
        "8 features. Labels -1/+1 kept. Split: the official cod-rna / "
        "cod-rna.t files (cod-rna.r, the remaining set, is not used)."
    ),
))

register(DatasetSpec(
    name="covtype-binary",
    title="covtype.binary (UCI Covertype, class 2 vs rest), LIBSVM binary",
    task="binary",
    n_features=54,
    files=(_libsvm("all", ("covtype.libsvm.binary.bz2", "covtype.libsvm.binary")),),
    parser="libsvm",
    parser_options={"n_features": 54},
    split="permutation", train_fraction=0.8, split_seed=0,
    n_train=464_809, n_test=116_203,
    n_classes=2, label_map={1.0: 1.0, 2.0: -1.0},
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#covtype.binary",
    licence="CC BY 4.0 (UCI Covertype)",
    notes=_LIBSVM_NOTE + (
        "54 features (unscaled version). The file's labels are 1 and 2: "
        "1 -> +1, 2 -> -1. No official test file: default_rng(0) permutation, "
        "first 80% train, last 20% test."
    ),
))

register(DatasetSpec(
    name="w8a",
    title="w8a, LIBSVM binary",
    task="binary",
    n_features=300,
    files=(
        _libsvm("train", ("w8a",)),
        _libsvm("test", ("w8a.t",)),
    ),
    parser="libsvm",
    parser_options={"n_features": 300},
    split="files", n_train=49_749, n_test=14_951,
    n_classes=2, label_map=_BINARY_PM,
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#w8a",
    notes=_LIBSVM_NOTE + (
        "300 binary features. Labels -1/+1 kept. Split: the official w8a / "
        "w8a.t files."
    ),
))

register(DatasetSpec(
    name="skin",
    title="Skin segmentation (Skin_NonSkin), UCI id 229",
    task="binary",
    n_features=3,
    files=(FileSpec(
        role="all",
        names=("Skin_NonSkin.txt", "Skin_NonSkin.txt.gz"),
        sources=_uci(229, "skin+segmentation", "Skin_NonSkin.txt", "Skin_NonSkin.txt"),
        mirror_sha256={"Skin_NonSkin.txt.gz": "12cdefd3ce3b22f79315b1e0eb495590b6f2a9f6da145e2b16e2c8e0940e7dc1"},
        mirror_dir="uci",
    ),),
    parser="csv",
    parser_options={"delimiter": "\t", "n_columns": 4, "label_column": 3},
    split="permutation", train_fraction=0.8, split_seed=0,
    n_train=196_045, n_test=49_012,
    n_classes=2, label_map={1.0: 1.0, 2.0: -1.0},
    uci_id=229,
    homepage="https://archive.ics.uci.edu/dataset/229/skin+segmentation",
    licence="CC BY 4.0",
    notes=(
        "Tab-separated B, G, R (0-255) then the label, CRLF line ends. Label "
        "1 (skin) -> +1, 2 (non-skin) -> -1. No official test file: "
        "default_rng(0) permutation, first 80% train (196,045), last 20% "
        "test (49,012), floor(0.8 n) train. The LIBSVM page's skin_nonskin is "
        "the same data in LIBSVM text; the UCI file is used."
    ),
))
