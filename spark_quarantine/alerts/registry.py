"""The :class:`Notifier` protocol and the registry of channels, built-in and third-party.

A channel is a name (``slack``, ``email``, ...) and a factory that builds a notifier from that
channel's settings. ``spark.quarantine.notifications.<name>.enabled`` turns a channel on and the
keys below ``spark.quarantine.notifications.<name>.`` configure it. Channels come from three places:

- the built-ins (``slack``, ``teams``, ``zoom``, ``pagerduty``, ``email``, ``webhook``), imported
  only when enabled;
- :func:`register_notifier`, from Python;
- the ``spark_quarantine.notifiers`` entry-point group, read once, the first time settings are
  parsed. An entry point's name is the channel name and its object is loaded only when the
  channel is enabled; a package cannot replace a built-in this way.

A factory (or a class) is called with one :class:`ChannelConfig` if it accepts one positional
argument, otherwise with none. Notifier *instances* need no registry: put them in
``user_conf["spark.quarantine.notifications.custom"]``.
"""

from __future__ import annotations

import importlib
import inspect
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

from spark_quarantine._logging import get_logger, redact
from spark_quarantine.alerts.alert import Alert
from spark_quarantine.alerts.http import RetryPolicy
from spark_quarantine.errors import ConfigError

__all__ = [
    "BUILTIN_CHANNELS",
    "ENTRY_POINT_GROUP",
    "ChannelConfig",
    "CommonSettings",
    "Notifier",
    "NotifierFactory",
    "build_notifier",
    "channel_name",
    "is_builtin",
    "is_notifier",
    "load_entry_points",
    "register_notifier",
    "registered_channels",
    "registered_factories",
    "unregister_notifier",
]

#: Entry-point group third-party packages use to add a channel.
ENTRY_POINT_GROUP = "spark_quarantine.notifiers"
#: The channels that ship with the library, by name.
BUILTIN_CHANNELS = ("slack", "teams", "zoom", "pagerduty", "email", "webhook")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Names that are common keys below spark.quarantine.notifications., never channels.
_RESERVED = frozenset(
    {"custom", "timeout", "max", "retry", "fail_on_error", "allow_http", "sample", "on", "error", "min", "suppress"}
    | {"state_table"}
)


@runtime_checkable
class Notifier(Protocol):
    """Anything that delivers an :class:`~spark_quarantine.alerts.Alert` somewhere.

    ``notify`` raises when the alert could not be delivered; the dispatcher logs it, goes on with
    the other channels, and raises :class:`~spark_quarantine.NotificationError` afterwards only
    when ``fail_on_error`` is set. A notifier may define a ``name`` attribute, used in logs.

    Example::

        class StdoutNotifier:
            name = "stdout"

            def notify(self, alert: Alert) -> None:
                print(alert.text)
    """

    def notify(self, alert: Alert) -> None: ...


@dataclass(frozen=True)
class CommonSettings:
    """The settings every channel shares (``spark.quarantine.notifications.*``, typed)."""

    timeout_seconds: float = 10.0
    max_retries: int = 3
    retry_backoff_seconds: float = 0.5
    allow_http: bool = False
    sample_rows: int = 5
    sample_exclude_columns: tuple[str, ...] = ()

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            timeout_seconds=self.timeout_seconds,
            max_retries=self.max_retries,
            backoff_seconds=self.retry_backoff_seconds,
        )

    def trim(self, alert: Alert) -> Alert:
        """``alert`` with at most ``sample_rows`` sample rows and none of the excluded columns."""
        return alert.with_samples(self.sample_rows, self.sample_exclude_columns)


@dataclass(frozen=True)
class ChannelConfig(Mapping[str, Any]):
    """What a channel factory receives: its name, its own settings and the common ones.

    ``options`` maps each key below ``spark.quarantine.notifications.<name>.`` (without the
    prefix and without ``enabled``) to its value, e.g. ``{"webhook.url": "https://..."}``.
    Built-in channels receive their values typed; third-party channels receive them as given,
    with ``${env:...}`` and ``${secret:...}`` tokens in strings resolved. The config is also a
    read-only mapping of its options: ``config["webhook.url"]``, ``config.get("team")``.
    """

    name: str
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    common: CommonSettings = field(default_factory=CommonSettings)

    def __getitem__(self, option: str) -> Any:
        return self.options[option]

    def __iter__(self) -> Iterator[str]:
        return iter(self.options)

    def __len__(self) -> int:
        return len(self.options)

    def key(self, option: str) -> str:
        """The full ``user_conf`` key of ``option``, for messages."""
        return f"spark.quarantine.notifications.{self.name}.{option}"


#: A factory: a callable (often a class) taking a :class:`ChannelConfig`, or nothing, and returning a notifier.
NotifierFactory = Callable[..., Any]

_lock = threading.RLock()
_factories: dict[str, NotifierFactory] = {}
_entry_points_loaded = False


def is_notifier(obj: object) -> bool:
    """True when ``obj`` has a callable ``notify`` (and is not a class)."""
    return not isinstance(obj, type) and callable(getattr(obj, "notify", None))


def channel_name(notifier: object) -> str:
    """The name used for ``notifier`` in logs and errors: its ``name`` (or ``channel``) attribute, or its class."""
    for attr in ("name", "channel"):
        value = getattr(notifier, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(notifier).__name__


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name) or name in _RESERVED:
        raise ConfigError(
            f"notifier name {name!r} must be lower-case letters, digits and '_', start with a letter, "
            f"and not be one of {', '.join(sorted(_RESERVED))}",
            code="SQ-N002",
        )


def register_notifier(name: str, factory: NotifierFactory | Notifier) -> None:
    """Make ``factory`` the channel ``name``, enabled by ``spark.quarantine.notifications.<name>.enabled``.

    ``factory`` is called with a :class:`ChannelConfig` (or with no argument if it takes none)
    and must return a :class:`Notifier`; a notifier instance may be given instead of a factory.
    Registering a name again replaces the factory, built-ins included.

    Example::

        register_notifier("opsgenie", lambda config: OpsgenieNotifier(config.options["api.key"]))
        user_conf = {
            "spark.quarantine.notifications.opsgenie.enabled": True,
            "spark.quarantine.notifications.opsgenie.api.key": "${secret:ops/opsgenie}",
        }
    """
    _check_name(name)
    target: Any = factory
    if is_notifier(target) and not callable(target):
        instance = target
        target = lambda: instance  # noqa: E731 - a notifier instance stands for a factory returning it
    if not callable(target):
        raise ConfigError(f"notifier factory for {name!r} is not callable", code="SQ-N002")
    with _lock:
        _factories[name] = target


def unregister_notifier(name: str) -> None:
    """Forget the channel ``name`` registered with :func:`register_notifier` (built-ins come back)."""
    with _lock:
        _factories.pop(name, None)


def _builtin_factory(name: str) -> NotifierFactory:
    module = importlib.import_module(f"spark_quarantine.alerts.{name}")
    factory: NotifierFactory = module.from_config
    return factory


def _lazy_entry_point(ep: EntryPoint) -> NotifierFactory:
    def factory(config: ChannelConfig) -> Any:
        try:
            target = ep.load()
        except Exception as exc:  # noqa: BLE001 - any import error of a plug-in becomes a setting error
            raise ConfigError(
                f"notifier entry point {ep.name!r} ({ep.value}) could not be loaded: "
                f"{type(exc).__name__}: {redact(str(exc))}",
                code="SQ-N002",
                key=config.key("enabled"),
            ) from None
        return _call_factory(target, config)

    return factory


def load_entry_points(eps: Iterable[EntryPoint] | None = None) -> tuple[str, ...]:
    """Register the channels of the ``spark_quarantine.notifiers`` entry points; return their names.

    ``eps`` defaults to the installed entry points of that group. Each object is imported only
    when its channel is built. Names that are built-ins, already registered or invalid are
    skipped with a warning.
    """
    global _entry_points_loaded
    found = entry_points(group=ENTRY_POINT_GROUP) if eps is None else eps
    added: list[str] = []
    log = get_logger()
    with _lock:
        for ep in found:
            if ep.name in BUILTIN_CHANNELS or ep.name in _factories:
                log.warning("notifier_entry_point_skipped", channel=ep.name, reason="name already in use")
                continue
            try:
                _check_name(ep.name)
            except ConfigError:
                log.warning("notifier_entry_point_skipped", channel=ep.name, reason="invalid name")
                continue
            _factories[ep.name] = _lazy_entry_point(ep)
            added.append(ep.name)
        if eps is None:
            _entry_points_loaded = True
    return tuple(added)


def _ensure_entry_points() -> None:
    if not _entry_points_loaded:
        load_entry_points()


def registered_channels() -> tuple[str, ...]:
    """Every channel name that can be enabled: the built-ins, then the registered ones."""
    _ensure_entry_points()
    with _lock:
        extra = sorted(name for name in _factories if name not in BUILTIN_CHANNELS)
    return (*BUILTIN_CHANNELS, *extra)


def is_builtin(name: str) -> bool:
    """True when ``name`` is a built-in channel that has not been replaced by :func:`register_notifier`."""
    with _lock:
        return name in BUILTIN_CHANNELS and name not in _factories


def _call_factory(factory: NotifierFactory, config: ChannelConfig) -> Any:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins without a signature: assume the documented form
        return factory(config)
    try:
        signature.bind(config)
    except TypeError:
        try:
            signature.bind()
        except TypeError:
            raise ConfigError(
                f"notifier factory for channel {config.name!r} must accept one ChannelConfig argument or none",
                code="SQ-N002",
                key=config.key("enabled"),
            ) from None
        return factory()
    return factory(config)


def build_notifier(config: ChannelConfig) -> Notifier:
    """Build the notifier of channel ``config.name`` (``SQ-N002`` if unknown or not a notifier)."""
    _ensure_entry_points()
    with _lock:
        factory = _factories.get(config.name)
    if factory is None:
        if config.name not in BUILTIN_CHANNELS:
            raise ConfigError(f"no notifier is registered as {config.name!r}", code="SQ-N002")
        factory = _builtin_factory(config.name)
    notifier = _call_factory(factory, config)
    if not is_notifier(notifier):
        raise ConfigError(
            f"the factory of channel {config.name!r} returned {type(notifier).__name__}, "
            "which has no notify(alert) method",
            code="SQ-N002",
            key=config.key("enabled"),
        )
    built: Notifier = notifier
    return built


def registered_factories() -> Mapping[str, NotifierFactory]:
    """A read-only snapshot of the channels registered from Python or entry points (not the built-ins)."""
    with _lock:
        return MappingProxyType(dict(_factories))
