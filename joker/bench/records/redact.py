"""Keep passwords of tracking URIs out of what the harness prints, logs and tags.

A tracking URI may carry credentials (``http://user:secret@host:5000``,
``postgresql://user:secret@db/mlflow``). The harness needs the URI itself to
connect, but every line it prints, every log record of the sweep process
and every tag it writes shows :func:`redact_uri`'s form instead
(``http://user:***@host:5000``). Better still, keep credentials out of URIs
altogether: MLflow reads ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` from the environment (README.md, "Running on
SLURM").
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any

#: ``scheme://user:password@`` (the password is group 2), also as Hydra escapes
#: it in overrides (``http\://user\:password@``).
_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*\\?://[^/\s:@\\]*\\?:)([^@\s/]+)(@)")
MASK = "***"


def redact_uri(text: Any) -> str:
    """Return ``text`` with the password of every URI in it replaced by ``***``.

    Parameters
    ----------
    text : object
        A URI, or any text containing URIs (a command line, a log message);
        converted with ``str``.

    Returns
    -------
    str
        ``"http://me:***@host:5000"`` for ``"http://me:pw@host:5000"``;
        text without credentials is returned unchanged.

    Examples
    --------
    >>> redact_uri("mlflow.tracking_uri=postgresql+psycopg2://u:s3cr3t@db:5432/mlflow")
    'mlflow.tracking_uri=postgresql+psycopg2://u:***@db:5432/mlflow'
    """
    return _USERINFO.sub(lambda m: m.group(1) + MASK + m.group(3), str(text))


class RedactingFilter(logging.Filter):
    """A logging filter that passes every record with URI passwords masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Render the record's message, mask it, and keep the record (always True)."""
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler
            return True
        masked = redact_uri(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def redact_logs(loggers: tuple = ("", "mlflow")) -> None:
    """Install :class:`RedactingFilter` on every handler of these loggers (once each).

    Parameters
    ----------
    loggers : tuple of str
        Logger names; ``""`` is the root logger (Hydra's lines go there),
        ``"mlflow"`` has its own handler (its "View run at <uri>" lines).
    """
    for name in loggers:
        for handler in logging.getLogger(name).handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())


def protect(uri: str) -> None:
    """Keep ``uri``'s password out of this process's output.

    Installs :func:`redact_logs`, and when ``uri`` carries a password also
    sets ``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT`` (MLflow writes "View run
    at <tracking URI>/..." lines straight to stdout, not through logging).

    Parameters
    ----------
    uri : str
        The tracking URI in use.
    """
    redact_logs()
    if redact_uri(uri) != uri:
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
