"""The zk-mock pytest plugin (registered by the package's ``pytest11`` entry point).

Fixtures:

``zk_mock``
    A fresh server for the test, stopped after it. Its settings come from
    the command line (``--zk-mock-compat``, ``--zk-mock-binary``) and from a
    ``@pytest.mark.zk_mock(...)`` marker on the test, module or class, whose
    keyword arguments are :class:`zk_mock.ZkMock`'s::

        @pytest.mark.zk_mock(clock="manual", tick_time=100)
        def test_expiry(zk_mock):
            ...

``zk_mock_server``
    One server for the whole test session, reset before each test that
    uses it (:meth:`zk_mock.ZkMock.reset`: sessions expired, the tree wiped,
    rules and recording gone). Cheaper than ``zk_mock`` when many tests
    need a plain server; markers do not apply to it.

Options: ``--zk-mock-compat=3.8|3.9`` (which server to be),
``--zk-mock-binary=PATH`` (the ``zk-mock`` executable; otherwise
``ZK_MOCK_BINARY``, this Python's scripts directory, then ``PATH``).
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

import pytest

from . import ZkMock


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zk-mock", "zk-mock: a ZooKeeper server for tests")
    group.addoption(
        "--zk-mock-compat",
        default=None,
        choices=("3.8", "3.9"),
        help="which ZooKeeper the zk_mock fixtures' servers are (default 3.8)",
    )
    group.addoption(
        "--zk-mock-binary",
        default=None,
        metavar="PATH",
        help="the zk-mock executable (default: ZK_MOCK_BINARY, the installed one, then PATH)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "zk_mock(**settings): settings of the zk_mock fixture's server (zk_mock.ZkMock's keyword arguments)",
    )


def _settings(config: pytest.Config) -> Dict[str, Any]:
    settings: Dict[str, Any] = {}
    compat = config.getoption("--zk-mock-compat")
    if compat:
        settings["compat"] = compat
    binary = config.getoption("--zk-mock-binary")
    if binary:
        settings["binary"] = binary
    return settings


@pytest.fixture
def zk_mock(request: pytest.FixtureRequest) -> Iterator[ZkMock]:
    """A zk-mock server of its own for this test."""
    settings = _settings(request.config)
    for marker in reversed(list(request.node.iter_markers("zk_mock"))):
        settings.update(marker.kwargs)
    with ZkMock(**settings) as server:
        yield server


@pytest.fixture(scope="session")
def _zk_mock_shared(request: pytest.FixtureRequest) -> Iterator[ZkMock]:
    with ZkMock(**_settings(request.config)) as server:
        yield server


@pytest.fixture
def zk_mock_server(_zk_mock_shared: ZkMock) -> ZkMock:
    """The session's shared zk-mock server, reset for this test."""
    _zk_mock_shared.reset()
    return _zk_mock_shared
