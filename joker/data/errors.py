"""Exceptions raised by :mod:`joker.data`.

Every error that comes from a file names the file, and where it can, the
1-based line of that file, so a user can open it and look.
"""

from __future__ import annotations

__all__ = [
    "DataError",
    "UnknownDatasetError",
    "ParseError",
    "ChecksumError",
    "DownloadError",
]


class DataError(Exception):
    """Base class of every error raised by :mod:`joker.data`."""


class UnknownDatasetError(DataError, KeyError):
    """A dataset name that is not in the registry.

    Parameters
    ----------
    name : str
        The name asked for.
    known : sequence of str
        The registered names, listed in the message.
    """

    def __init__(self, name: str, known):
        self.name = name
        self.known = tuple(known)
        super().__init__(
            f"unknown dataset {name!r}; known datasets: {', '.join(self.known)}"
        )

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class ParseError(DataError, ValueError):
    """A file whose content does not match its official layout.

    Parameters
    ----------
    path : str or os.PathLike
        The file being read.
    line : int or None
        1-based line number in the (decompressed) file, or None when the
        problem has no line (binary formats, an empty file).
    message : str
        What is wrong, in words.
    """

    def __init__(self, path, line, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        where = self.path if line is None else f"{self.path}, line {line}"
        super().__init__(f"{where}: {message}")


class ChecksumError(DataError):
    """A file whose sha256 is not the one the registry expects.

    Parameters
    ----------
    path : str or os.PathLike
        The file checked (for downloads: the URL it came from is in the
        message; the bad file has already been deleted).
    expected : sequence of str
        Accepted sha256 hex digests.
    actual : str
        The digest of the file.
    origin : str, optional
        Where the file came from (URL or mirror path), for the message.
    """

    def __init__(self, path, expected, actual: str, origin: str | None = None):
        self.path = str(path)
        self.expected = tuple(expected)
        self.actual = actual
        src = f" (from {origin})" if origin else ""
        super().__init__(
            f"{self.path}{src}: sha256 {actual} does not match the expected "
            f"{' or '.join(self.expected)}"
        )


class DownloadError(DataError):
    """A file that is neither in a mirror, nor in the cache, nor downloadable.

    The message names the file, the places looked at and every URL tried
    with the reason it failed.
    """
