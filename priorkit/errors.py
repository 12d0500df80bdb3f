"""Exceptions priorkit raises.  Every message names the culprit and what to do."""
from __future__ import annotations


class PriorkitError(Exception):
    """Base class of all priorkit errors."""


class PluginError(PriorkitError):
    """A plug-in failed to load, matched no hook spec, or registered badly."""


class ProviderParameterError(PluginError, ValueError):
    """A provider was given a parameter it does not take, or a value it does not accept.

    Raised by a provider's constructor (built-in ones raise it themselves) or by
    ``get_provider``, which wraps a plug-in constructor's ValueError / TypeError in it;
    the message names the provider, the parameter and what it accepts.  The command
    line reports it as a usage error (exit status 2).
    """


class UnknownProviderError(PriorkitError, KeyError):
    """``get_provider`` was asked for a name no plug-in registered."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class ProviderOutputError(PriorkitError, ValueError):
    """A provider returned an array of the wrong shape, dtype or range."""


class ResourceError(PriorkitError):
    """A data file or model could not be found, fetched or parsed."""


class DataFormatError(ResourceError, ValueError):
    """A data file is malformed; the message names the file and line."""


class DocumentError(DataFormatError):
    """One input document (or record) is bad: not UTF-8, empty, a record without text, an
    annotation off its text.  The message names the file and line or the document id;
    ``read_documents(..., skip_bad=True)`` skips such a document and goes on."""


class CacheError(PriorkitError):
    """The DuckDB cache is missing, locked, foreign, or does not match."""


class TokenizerError(PriorkitError, TypeError):
    """The tokenizer cannot be aligned (e.g. a slow, non-fast tokenizer)."""
