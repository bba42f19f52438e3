"""Where engine work runs: a pool of local processes or the workers of a Ray cluster, each worker with its own
engine, and how a run tells work that failed from work that was lost with its worker.

Labelling and self-play hand their work out in small independent pieces (a few positions, one game) to
:class:`LocalWorkers` or, given ``--ray``, :class:`RayWorkers`, and get the results back as the pieces finish
(:func:`as_finished`: self-play) or in the order given (:func:`in_order`: labelling). A piece
depends only on its input, never on the worker that ran it, so a run spread over a cluster gives what a local run
gives. ``--ray`` takes ``local`` (a Ray instance started here for the run), ``auto`` (the running cluster: ``ray
start`` on this machine, or RAY_ADDRESS) or a cluster's address, ``HOST:PORT`` or ``ray://HOST:PORT`` (Ray's
client, the ``ray[client]`` extra). An address is tried first, with a timeout, because ray.init waits for minutes
on an address that refuses or does not answer, or that answers but is not a Ray cluster's head. Ray runs a piece
whose worker or node died again, up to :data:`RETRIES` times; a piece still lost after that, or whose local worker
process died, is :class:`WorkLost`, while an error of the work itself (an engine that fails) is raised as that
error.
"""

from __future__ import annotations

import atexit
import itertools
import multiprocessing.util
import os
import socket
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

import chess.engine

from training.errors import TrainingError
from training.processes import process_pool
from training.engines import start_engine

#: Seconds to wait for a Ray address to answer before giving up on it.
CONNECT_TIMEOUT_S = 10.0
#: Times Ray runs a piece of work again whose worker or node died (Ray's own default for tasks).
RETRIES = 3
#: Pieces of work in flight per worker: enough to keep every worker busy while results are written.
WINDOW_PER_WORKER = 4


class ClusterError(TrainingError):
    """Ray is not installed, or the cluster of ``--ray`` cannot be started or reached."""


class WorkLost(TrainingError):
    """Work whose worker (a process, a Ray worker or its node) died before it finished."""


# --- each worker's engine --------------------------------------------------------------------------------

_ENGINES: dict[tuple, chess.engine.SimpleEngine] = {}


def worker_engine(command: str, options: Optional[Mapping[str, object]] = None,
                  known_only: bool = False) -> chess.engine.SimpleEngine:
    """This worker process's engine for ``command`` with ``options`` (training.engines.start_engine), started
    on first use, kept for the next piece of work and closed when the process ends."""
    key = (command, tuple(sorted((options or {}).items())), known_only)
    engine = _ENGINES.get(key)
    if engine is None:
        engine = _ENGINES[key] = start_engine(command, options, known_only)
        # pool workers skip atexit, other processes may skip the finaliser: both close it, the first one wins
        multiprocessing.util.Finalize(None, _close_worker_engine, args=(key,), exitpriority=10)
        atexit.register(_close_worker_engine, key)
    return engine


def drop_worker_engine(engine: chess.engine.SimpleEngine) -> None:
    """Forget an engine that failed (the next piece of work starts a new one)."""
    for key, known in list(_ENGINES.items()):
        if known is engine:
            del _ENGINES[key]


def _close_worker_engine(key: tuple) -> None:
    engine = _ENGINES.pop(key, None)
    if engine is not None:
        try:
            engine.quit()
        except (chess.engine.EngineError, OSError):
            pass  # an engine that already died: nothing left to close


# --- the workers -----------------------------------------------------------------------------------------

class LocalWorkers:
    """``workers`` local processes (spawned), one piece of work at a time each."""

    def __init__(self, workers: int) -> None:
        self.executor = process_pool(workers)
        self.window = WINDOW_PER_WORKER * workers

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        """``function(argument)`` in a worker; a pool broken by a dead worker gives a future of WorkLost."""
        try:
            return self.executor.submit(function, argument)
        except BrokenProcessPool:
            lost: Future = Future()
            lost.set_exception(WorkLost("a worker process died"))
            return lost

    def result(self, future: Future) -> Any:
        """A finished future's result; a worker that died as WorkLost."""
        try:
            return future.result()
        except BrokenProcessPool:
            raise WorkLost("a worker process died") from None

    def close(self) -> None:
        """Let the running work finish, drop the work not started, end the workers (and their engines)."""
        self.executor.shutdown(wait=True, cancel_futures=True)


class RayWorkers:
    """The workers of a Ray cluster (``address``: see the module's docstring), one CPU per piece of work;
    ``local_cpus``: the CPUs of a Ray instance started here for ``local``."""

    def __init__(self, address: str, local_cpus: int) -> None:
        try:
            import ray
        except ImportError:
            raise ClusterError("--ray needs Ray: pip install -e '.[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            if address != "local":
                check_reachable(address)
            try:
                if address == "local":
                    ray.init(address="local", num_cpus=local_cpus, include_dashboard=False, log_to_driver=False)
                else:
                    ray.init(address=address, log_to_driver=False)
            except ImportError as error:  # ray:// without the client's packages
                raise ClusterError(f"--ray {address} needs Ray's client: pip install 'ray[client]' ({error})") \
                    from None
            except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
                raise ClusterError(f"cannot start or reach Ray ({address}): {error}") from None
        self.window = WINDOW_PER_WORKER * max(1, int(ray.cluster_resources().get("CPU", local_cpus)))
        self.tasks: dict[Callable, Any] = {}
        self.running: dict[Future, Any] = {}  # each future's object reference, until its result is taken

    def submit(self, function: Callable[[Any], Any], argument: Any) -> Future:
        """``function(argument)`` as a Ray task of one CPU, run again up to RETRIES times if its worker dies."""
        task = self.tasks.get(function)
        if task is None:
            task = self.tasks[function] = self.ray.remote(num_cpus=1, max_retries=RETRIES)(function)
        reference = task.remote(argument)
        future = reference.future()
        self.running[future] = reference
        return future

    def result(self, future: Future) -> Any:
        """A finished future's result: an error of the work as itself, a lost worker or node as WorkLost."""
        from ray.exceptions import RayError, RayTaskError
        self.running.pop(future, None)
        try:
            return future.result()
        except RayTaskError as error:  # the work's own exception, raised in the worker
            if isinstance(error.cause, TrainingError):
                raise error.cause from None  # its message, not the worker's traceback
            raise  # a bug: with the worker's traceback
        except RayError as error:
            raise WorkLost(f"{type(error).__name__}: {str(error).strip().splitlines()[0]}") from None

    def close(self) -> None:
        """Cancel the work whose result was not taken (a run that stops early), and end a Ray started here."""
        for reference in self.running.values():
            self.ray.cancel(reference)
        self.running.clear()
        if self.started:
            self.ray.shutdown()


def workers_for(ray: Optional[str], workers: int) -> LocalWorkers | RayWorkers:
    """Ray's workers for a ``--ray`` address, else ``workers`` local processes."""
    return RayWorkers(ray, workers) if ray else LocalWorkers(workers)


# --- reaching a cluster ----------------------------------------------------------------------------------

def check_reachable(address: str) -> None:
    """Fail at once, with a message, where ``address`` (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``) has no Ray
    listening: a connection refused or unanswered within CONNECT_TIMEOUT_S, or (a head's address) a server that is
    not a Ray cluster's head."""
    target = _bootstrap_address(address)
    if target is None:
        return
    host, _, port = target.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(f"--ray {address}: not a Ray address (local, auto, HOST:PORT or ray://HOST:PORT)")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = "no answer within {:g} s".format(CONNECT_TIMEOUT_S) if isinstance(error, TimeoutError) else \
            (error.strerror or str(error))
        raise ClusterError(f"cannot reach Ray at {target} (--ray {address}): {reason}") from None
    if not target.startswith("ray://"):  # Ray's client gives up by itself, with a message
        _check_head(target, address)


def _check_head(target: str, address: str) -> None:
    """Ask the server at ``target`` for its cluster's id, as ray.init's first call to a head (its GCS) does, over
    Ray's own gRPC channel (its TLS and token settings): any answer of the GCS, even a refused token, is a head;
    no answer within CONNECT_TIMEOUT_S, or a server without that call (another port of the cluster), is not."""
    try:
        import grpc
        from ray._private.grpc_utils import init_grpc_channel
        from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc
    except ImportError:
        return  # a Ray without these: ray.init decides
    with init_grpc_channel(target) as channel:
        try:
            gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=CONNECT_TIMEOUT_S)
        except grpc.RpcError as error:
            code = error.code()
            if code in (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED):
                why = "no answer within {:g} s".format(CONNECT_TIMEOUT_S) \
                    if code == grpc.StatusCode.DEADLINE_EXCEEDED else code.name.lower()
                raise ClusterError(f"{target} (--ray {address}) is not a Ray cluster's head ({why}): give the address "
                                   "`ray start --head` printed (port 6379 by default), or ray://HOST:10001 for Ray's "
                                   "client") from None


def _bootstrap_address(address: str) -> Optional[str]:
    """The address ``--ray`` names, ``auto`` resolved as ray.init resolves it (RAY_ADDRESS, else the cluster
    ``ray start`` last started here); None where Ray's own lookup is not there to ask (ray.init then decides)."""
    if address != "auto":
        return address
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"]
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:
        return None
    try:
        return canonicalize_bootstrap_address_or_die("auto")
    except ConnectionError:
        raise ClusterError("--ray auto: no running Ray cluster found here (start one with `ray start --head`, or "
                           "give its address)") from None


def as_finished(workers: LocalWorkers | RayWorkers, function: Callable[[Any], Any], arguments: Iterable[Any]
                ) -> Iterator[tuple[Any, Any]]:
    """(argument, result) of ``function`` for each of ``arguments`` as it finishes, at most ``workers.window`` in
    flight. Work lost with its worker gives (argument, the WorkLost) and the rest goes on; an error of the work
    itself ends the iteration with that error."""
    pending: dict[Future, Any] = {}
    waiting = iter(arguments)
    while True:
        for argument in itertools.islice(waiting, max(0, workers.window - len(pending))):
            pending[workers.submit(function, argument)] = argument
        if not pending:
            return
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in done:
            argument = pending.pop(future)
            try:
                outcome = workers.result(future)
            except WorkLost as lost:
                outcome = lost
            yield argument, outcome


def in_order(workers: LocalWorkers | RayWorkers, function: Callable[[Any], Any], work: Iterable[tuple[Any, Any]]
             ) -> Iterator[tuple[Any, Any]]:
    """(context, result) of ``function(argument)`` for each (argument, context) of ``work``, in the order given, at
    most ``workers.window`` in flight: for output whose order must not depend on the workers (label shards). Work
    lost with its worker gives (context, the WorkLost) and the rest goes on; an error of the work itself ends the
    iteration with that error."""
    pending: deque[tuple[Any, Future]] = deque()
    waiting = iter(work)
    while True:
        for argument, context in itertools.islice(waiting, max(0, workers.window - len(pending))):
            pending.append((context, workers.submit(function, argument)))
        if not pending:
            return
        context, future = pending.popleft()
        try:
            outcome = workers.result(future)
        except WorkLost as lost:
            outcome = lost
        yield context, outcome
