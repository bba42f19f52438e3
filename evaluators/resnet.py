"""The ResNet policy-value evaluator: an ONNX network run by onnxruntime.

It masks illegal moves, softmaxes the remaining policy logits (at
``PolicyTemperature``), converts the W/D/L head to a value and evaluates
batches. It is the bare network: the backend registry wraps it in the
heuristic blend (:mod:`evaluators.blend`) and the cache (:mod:`evaluators.cache`).

Evaluation runs in the stages of :class:`evaluators.base.Request`, so that a
search can prepare the next leaves while the network runs: ``prepare`` takes
the encoding's bitboards and the moves' policy slots from the board (the only
Python work per position), ``collate`` unpacks a whole batch into planes,
``infer`` runs the network (beyond it, only a loop handing each request its
row), ``finish`` turns the W/D/L logits into probabilities and softmaxes every
position's legal moves in one pass.

``Precision`` chooses what ``infer`` runs: the weights file (fp32), its int8
copy beside it, or (the default) mixed: the int8 copy, and the fp32 network
again for the positions whose two best moves are too close for 8-bit rounding.

The weights file is an ONNX file exported by the training package, or a Leela
Chess Zero network (``.pb.gz``), which :mod:`evaluators.leela_convert` converts
to such a file once, cached by its content. The metadata says how the policy
encodes castling and queen promotions (:class:`evaluators.moves.PolicySlots`).
"""

from __future__ import annotations

import hashlib
from array import array
from itertools import chain
from pathlib import Path
from typing import Any, Hashable, Optional, Sequence

import chess
import numpy as np

from evaluators.base import Evaluation, Evaluator, LoadError, MoveLists, Request, evaluate_in_stages, value_centipawns
from evaluators.blend import BlendedEvaluator
from evaluators.cache import CachedEvaluator
from evaluators.encoding import (ENCODINGS, FEATURES36, LC0_112, PLANES18, Encoding, assemble, get_encoding,
                                 last_move_squares, lc0_history, unpack_unflipped)
from evaluators.leela import is_leela_file
from evaluators.moves import KING_TWO_SQUARES, POLICY_LAYOUT, PUSH_SLOT, PolicySlots, mirror_move
from evaluators.onnx_model import (BACKENDS, CASTLING_KEY, CPU_PROVIDER, QUEEN_PROMOTION_KEY, RESNET_KIND, open_session,
                                   running_provider)
from hackmate_core.options import Option

#: Metadata key of an int8 file (``python -m training quantize``): the SHA-256 of the fp32 file it was quantised
#: from.
INT8_OF_KEY = "hackmate.int8_of"
#: ``Precision``: fp32 alone; the int8 copy alone; or mixed, the int8 copy with fp32 deciding where it is unsure.
PRECISIONS = ("fp32", "int8", "mixed")
#: Mixed precision: the fp32 network evaluates again the positions where the int8 network's two best legal moves
#: are closer than this in policy logits (priors within a factor of e^0.2 = 1.22 at temperature 1), where 8-bit
#: rounding could swap them. 0.125 until the default of 26 November 2026, whose int8 copy needs 0.2 to keep the
#: top move as fp32's on 99% of Carlsen's positions; docs/record/bench.md, "The mixed-precision margin raised to 0.2".
MIXED_MARGIN = 0.2
#: The attribute of a compiled PUCT leaf (hackmate_core._cpuct.Leaf) that holds each encoding's binary planes.
LEAF_PLANES = {PLANES18: "planes", LC0_112: "lc0_planes", FEATURES36: "feature_planes"}


def int8_companion(path: Path) -> Path:
    """Where the int8 copy of the network ``path`` lives: ``X-int8.onnx`` beside ``X.onnx``."""
    return path.with_name(path.stem + "-int8.onnx")


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes (what ties an int8 file to the fp32 file it came from)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax (the W/D/L head's logits to probabilities)."""
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    return weights / weights.sum(axis=1, keepdims=True)


class ResNetEvaluator(Evaluator):
    name = "resnet"
    has_policy = True
    NATURAL_SEARCH = "puct"
    DEFAULT_WEIGHTS = "resnet.onnx"
    HELP = "policy-value network, ONNX"
    #: cache(blend(network)): the cache holds blended evaluations.
    WRAPPERS = (CachedEvaluator, BlendedEvaluator)
    OPTIONS = (Option("PolicyTemperature", "spin", 100, 10, 500, scale=100, attribute="softmax_temperature",
                      help="softmax temperature of the policy head x100 (below 100 sharpens the priors)"),
               Option("Precision", "combo", "mixed", choices=PRECISIONS, attribute="precision",
                      help="fp32: the weights file alone; int8: its int8 copy (X-int8.onnx beside X.onnx, made by "
                           "python -m training quantize); mixed: the int8 copy, and fp32 again where its two best "
                           "moves are close"),
               Option("MirrorRoot", "check", False, attribute="mirror_root",
                      help="average the root's priors with its a<->h mirror image's (positions without castling "
                           "rights; networks without history or last-move planes)"),
               Option("RootPolicyTemperature", "spin", 0, 0, 500, scale=100, attribute="root_policy_temperature",
                      help="softmax temperature of the root's priors x100 (0: PolicyTemperature, as in the tree)"),
               Option("Backend", "combo", "auto", choices=BACKENDS, attribute="backend",
                      help="where the network runs: auto (a GPU where onnxruntime has a working CUDA provider, "
                           "else the CPU), cpu, cuda or tensorrt (both need the gpu extra: onnxruntime-gpu)"))

    @classmethod
    def create(cls, weights: Optional[Path], threads: int, lazy: bool) -> "ResNetEvaluator":
        assert weights is not None  # DEFAULT_WEIGHTS is set
        return cls(weights, threads, lazy)

    def __init__(self, path: Path, threads: int = 1, lazy: bool = False, int8: Optional[Path] = None) -> None:
        """``path``: an ONNX file or a Leela network; ``lazy``: read the weights at the first use or :meth:`load`
        (the engine answers `uci` before that); ``int8``: the network's int8 copy, by default
        :func:`int8_companion` of the ONNX file where it exists."""
        super().__init__()
        #: The weights file as named: an ONNX file, or a Leela network.
        self.source = path
        #: The ONNX file that runs: ``source``, or a Leela network's conversion in the cache (known once loaded).
        self.path = path
        self._int8_asked = int8
        self.int8_path = int8 or int8_companion(path)
        self.threads = threads
        self._session: Any = None
        self._int8_session: Any = None
        #: Why ``Precision`` int8 or mixed runs the weights file alone ("" when the int8 copy is usable).
        self.int8_problem = ""
        #: Positions the fp32 network has evaluated again under ``Precision mixed`` (a running count).
        self.rechecked = 0
        self._metadata: dict[str, Any] = {}
        self._encoding: Optional[Encoding] = None
        self._slots = PolicySlots()
        if not lazy:
            self.load()

    # -------------------------------------------------------------- loading

    def load(self) -> None:
        if self._session is not None:
            return
        if is_leela_file(self.source):
            from evaluators.leela_convert import converted  # onnx is imported only for a Leela network
            self.path = converted(self.source)
            self.int8_path = self._int8_asked or int8_companion(self.path)
        session, metadata = open_session(self.path, RESNET_KIND, self.threads, self.backend)
        encoding_name = metadata.get("encoding")
        if encoding_name not in ENCODINGS:
            raise LoadError(f"{self.path}: unknown board encoding {encoding_name!r} (this engine knows "
                            f"{', '.join(ENCODINGS)})")
        if metadata.get("policy_layout") != POLICY_LAYOUT or metadata.get("value_head") != "wdl":
            raise LoadError(f"{self.path}: unsupported policy layout {metadata.get('policy_layout')!r} or value "
                            f"head {metadata.get('value_head')!r} (expected {POLICY_LAYOUT} and wdl)")
        try:
            self._slots = PolicySlots(metadata.get(CASTLING_KEY, KING_TWO_SQUARES),
                                      metadata.get(QUEEN_PROMOTION_KEY, PUSH_SLOT))
        except ValueError as error:
            raise LoadError(f"{self.path}: {error}") from None
        self._metadata, self._encoding = metadata, get_encoding(encoding_name)
        self._session = session
        self._int8_session = self._open_int8()
        self.evaluate(chess.Board())  # onnxruntime sizes its buffers at the first run: here, not in a timed move

    def _open_int8(self) -> Any:
        """The int8 copy's session, or None with :attr:`int8_problem` saying why (a missing copy is no error:
        the weights file runs alone; a copy of another network is refused)."""
        self.int8_problem = ""
        if INT8_OF_KEY in self._metadata:
            self.int8_problem = f"{self.path.name} is itself an int8 copy"
            return None
        if not self.int8_path.exists():
            self.int8_problem = (f"{self.source.name} is a Leela network, converted without an int8 copy"
                                 if self.path != self.source and self._int8_asked is None else
                                 f"no int8 copy {self.int8_path.name} beside {self.path} (python -m training quantize)")
            return None
        try:
            session, metadata = open_session(self.int8_path, RESNET_KIND, self.threads, self.backend)
        except LoadError as error:
            self.int8_problem = str(error)
            return None
        if metadata.get(INT8_OF_KEY) != file_digest(self.path):
            self.int8_problem = f"{self.int8_path} was not quantised from {self.path} (its {INT8_OF_KEY} differs)"
            return None
        return session

    def notices(self) -> list[str]:
        if self._session is None:
            return []
        notices = [f"Backend {self.backend}: the network runs on {self.provider}"]
        if self.precision != "fp32" and self._int8_session is None:
            notices.append(f"Precision {self.precision}: {self.int8_problem}; {self.source.name} runs alone")
        return notices

    def fallbacks(self) -> list[str]:
        if self._session is not None and self.backend in ("cuda", "tensorrt") and self.provider == CPU_PROVIDER:
            return [f"Backend {self.backend}: no working GPU provider in this onnxruntime (the gpu extra installs "
                    "onnxruntime-gpu; a GPU and its CUDA libraries are needed); the network runs on the CPU"]
        return []

    @property
    def session(self) -> Any:
        self.load()
        return self._session

    @property
    def runs_int8(self) -> bool:
        """Whether evaluations go through the int8 copy (``Precision`` int8 or mixed, with a usable copy)."""
        self.load()
        return self.precision != "fp32" and self._int8_session is not None

    @property
    def metadata(self) -> dict[str, Any]:
        self.load()
        return self._metadata

    @property
    def encoding(self) -> Encoding:
        self.load()
        assert self._encoding is not None
        return self._encoding

    def set_threads(self, threads: int) -> None:
        """A new onnxruntime session with ``threads`` intra-op threads (a running batch keeps the old one)."""
        if threads != self.threads:
            self.threads = threads
            self._reopen()

    def set_option(self, name: str, value: Any) -> bool:
        """As :class:`Configurable`'s, and a new ``Backend`` opens the network again on its provider."""
        backend = self.backend
        if not super().set_option(name, value):
            return False
        if self.backend != backend:
            self._reopen()
        return True

    def _reopen(self) -> None:
        """New sessions with the current threads and backend, where the network is loaded (a running batch keeps
        the old ones)."""
        if self._session is not None:
            self._session, _ = open_session(self.path, RESNET_KIND, self.threads, self.backend)
            self._int8_session = self._open_int8()

    @property
    def provider(self) -> str:
        """The onnxruntime provider that runs the network (the fp32 file's)."""
        return running_provider(self.session)

    def cache_key(self, board: chess.Board) -> Hashable:
        """The position and its clock, and with history planes a digest of all of them (the earlier positions,
        their repetitions, the filled history of a game begun at a FEN: no list of moves says them all).

        Last-move planes (features36) are left out, as Lc0 leaves the history out by default (CacheHistoryLength
        0): a transposition reached by other moves gets the evaluation cached first, and the planes cost no cache
        hits (docs/compiled-core.md, "features36 on the compiled leaves")."""
        key = super().cache_key(board)
        if self.encoding.history > 1:
            key += (hashlib.blake2b(array("Q", self.encoding.bitboards(board)).tobytes(), digest_size=16).digest(),)
        return key

    # ---------------------------------------------------------- evaluation

    @property
    def infers_in_native_code(self) -> bool:
        return True

    def run(self, inputs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Raw network outputs (policy logits, W/D/L probabilities) for a batch of encoded positions."""
        policy, wdl_logits = self.session.run(["policy", "wdl"], {"planes": inputs})
        return policy, _softmax_rows(wdl_logits)

    def evaluate(self, board: chess.Board, moves: Optional[Sequence[chess.Move]] = None) -> Evaluation:
        return self.evaluate_batch([board], None if moves is None else [moves])[0]

    def evaluate_batch(self, boards: Sequence[chess.Board], moves: MoveLists = None) -> list[Evaluation]:
        return evaluate_in_stages(self, boards, moves)

    def prepare(self, board: chess.Board, moves: Sequence[chess.Move]) -> Request:
        request = Request(moves)
        request.bitboards = self.encoding.bitboards(board)  # type: ignore[attr-defined]
        request.black = board.turn == chess.BLACK  # type: ignore[attr-defined]
        request.rule50 = board.halfmove_clock  # type: ignore[attr-defined]
        request.slots = self._slots.slots(board, moves)  # type: ignore[attr-defined]
        return request

    def root_evaluation(self, board: chess.Board, moves: Sequence[chess.Move]) -> Optional[Evaluation]:
        """The root's evaluation under ``MirrorRoot`` and ``RootPolicyTemperature`` (None when both are off): the
        average of the position and its a<->h mirror image, where no castling rights make them differ (the network
        does not see them identically, so two looks average out some of its error; encodings of the position alone:
        history or last-move planes would need the game mirrored too); then the priors at the root's temperature.
        PUCT takes the root's priors from it."""
        temperature = self.root_policy_temperature or self.softmax_temperature
        mirror = self.mirror_root and not board.castling_rights and self.encoding.position_only
        if not mirror and temperature == self.softmax_temperature:
            return None
        moves = list(moves)
        if mirror:
            mirrored_moves = [mirror_move(move) for move in moves]
            own, mirrored = self.evaluate_batch([board, board.transform(chess.flip_horizontal)],
                                                [moves, mirrored_moves])
            value, draw = (own.value + mirrored.value) / 2, (own.draw + mirrored.draw) / 2  # type: ignore[operator]
            policy = [(a + b) / 2 for a, b in zip(own.policy_of(moves),  # type: ignore[arg-type]
                                                  mirrored.policy_of(mirrored_moves))]  # type: ignore[arg-type]
        else:
            own = self.evaluate(board, moves)
            value, draw, policy = own.value, own.draw, own.policy_of(moves)  # type: ignore[assignment]
        if temperature != self.softmax_temperature and policy:  # p ** (T / T_root) in logs: no underflow to 0 / 0
            with np.errstate(divide="ignore"):
                logs = np.log(np.asarray(policy, dtype=np.float64))
            weights = np.exp((logs - logs.max()) * (self.softmax_temperature / temperature))
            policy = (weights / weights.sum()).tolist()
        return Evaluation(value, draw, moves=moves, policy=policy)

    def takes_leaves(self) -> bool:
        """Whether :meth:`prepare_leaf` can take a compiled PUCT leaf: yes, once the network is loaded (the leaf
        computes every encoding and every policy convention)."""
        self.load()
        return True

    def leaf_history(self, board: chess.Board) -> Optional[bytes]:
        """What the compiled leaves below the search's root ``board`` take from its game: lc0-112's history of the
        root (:func:`evaluators.encoding.lc0_history`, 8 x 13 native uint64s), features36's last moves of the root
        (:func:`evaluators.encoding.last_move_squares`, 4 signed bytes); None for planes18, which needs neither."""
        encoding = self.encoding
        if encoding.history > 1:
            return array("Q", chain.from_iterable(lc0_history(board))).tobytes()
        if encoding.last_moves:
            return array("b", last_move_squares(board)).tobytes()
        return None

    def prepare_leaf(self, leaf: Any) -> Request:
        """:meth:`prepare` of a compiled PUCT leaf (hackmate_core._cpuct.Leaf): the same bitboards and slots,
        computed in C, the bitboards already unpacked into planes (bytes); :meth:`finish` treats both requests
        alike. The leaf's cache key tells histories apart as :meth:`cache_key` does."""
        request = Request(leaf.moves)
        request.binary = getattr(leaf, LEAF_PLANES[self.encoding.name])  # type: ignore[attr-defined]
        request.rule50 = leaf.rule50  # type: ignore[attr-defined]
        request.slots = leaf.slots(self._slots.king_takes_rook, self._slots.own_queen_slot)  # type: ignore
        return request

    def collate(self, requests: Sequence[Request]) -> Optional[np.ndarray]:
        """The planes of a batch of prepared requests (None for an empty batch)."""
        if not requests:
            return None
        if hasattr(requests[0], "binary"):  # compiled leaves (a batch is one search's, all of one kind)
            binary = np.frombuffer(b"".join([r.binary for r in requests]),  # type: ignore[attr-defined]
                                   dtype=bool).reshape(len(requests), -1, 8, 8)
        else:
            black = np.array([r.black for r in requests])  # type: ignore[attr-defined]
            binary = unpack_unflipped(np.array([r.bitboards for r in requests], dtype=np.uint64),  # type: ignore
                                      black)
        rule50 = np.array([min(255, r.rule50) for r in requests], dtype=np.uint8)  # type: ignore[attr-defined]
        return assemble(binary, rule50)

    def infer(self, requests: Sequence[Request], inputs: Optional[np.ndarray]) -> None:
        """Runs the network on ``inputs`` (:meth:`collate`'s planes of ``requests``) and hands each request its
        row of the outputs; the W/D/L softmax waits for :meth:`finish`."""
        if not requests:
            return
        if not self.runs_int8:
            outputs = tuple(self.session.run(["policy", "wdl"], {"planes": inputs}))  # W/D/L logits: finish softmaxes
        else:
            policy, wdl = self._int8_session.run(["policy", "wdl"], {"planes": inputs})
            if self.precision == "mixed":
                unsure = _close_calls(policy, requests)
                if len(unsure):
                    self.rechecked += len(unsure)
                    policy[unsure], wdl[unsure] = self._session.run(["policy", "wdl"], {"planes": inputs[unsure]})
            outputs = (policy, wdl)
        for row, request in enumerate(requests):
            request.outputs, request.row = outputs, row  # type: ignore[attr-defined]

    def finish(self, requests: Sequence[Request]) -> list[Evaluation]:
        groups: dict[int, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(id(request.outputs), []).append(i)  # type: ignore[attr-defined]
        evaluations: list[Optional[Evaluation]] = [None] * len(requests)
        for members in groups.values():
            batch = [requests[i] for i in members]
            for i, evaluation in zip(members, self._finish_batch(batch)):
                evaluations[i] = evaluation
        return evaluations  # type: ignore[return-value]

    def _finish_batch(self, requests: Sequence[Request]) -> list[Evaluation]:
        """The evaluations of requests from one network run."""
        values, draws, priors, bounds = self._finish_run(requests)
        flat = priors.tolist()
        return [Evaluation(value, draw, moves=request.moves, policy=flat[bounds[i]:bounds[i + 1]])
                for i, (request, value, draw) in enumerate(zip(requests, values, draws))]

    def finish_priors(self, requests: Sequence[Request]
                      ) -> Optional[tuple[list[float], list[float], np.ndarray, list[int]]]:
        """What :meth:`finish` makes its evaluations of, for a wrapper that mixes more into the priors first (the
        blend) without an evaluation object per request in between: the values, the draws, and the priors of
        every request's legal moves end to end (float32), request ``i``'s from ``bounds[i]`` to
        ``bounds[i + 1]``. None when the requests come from several network runs."""
        outputs = requests[0].outputs if requests else None  # type: ignore[attr-defined]
        for request in requests:
            if request.outputs is not outputs:  # type: ignore[attr-defined]
                return None
        return self._finish_run(requests) if requests else None

    def _finish_run(self, requests: Sequence[Request]) -> tuple[list[float], list[float], np.ndarray, list[int]]:
        """:meth:`finish_priors` of requests from one network run: the softmax over each position's legal moves
        in one numpy pass."""
        policy, wdl_logits = requests[0].outputs  # type: ignore[attr-defined]
        rows = [r.row for r in requests]  # type: ignore[attr-defined]
        wdl = _softmax_rows(wdl_logits[rows])  # this batch's rows, in the requests' order
        values = (wdl[:, 0] - wdl[:, 2]).tolist()
        draws = wdl[:, 1].tolist()
        bounds = [0]
        for request in requests:
            bounds.append(bounds[-1] + len(request.moves))
        with_moves = [i for i, r in enumerate(requests) if r.moves]
        if not with_moves:
            return values, draws, np.zeros(0, dtype=np.float32), bounds
        lengths = [len(requests[i].moves) for i in with_moves]
        slots = _slots_of([requests[i] for i in with_moves], sum(lengths))
        logits = policy[np.repeat([rows[i] for i in with_moves], lengths), slots] / self.softmax_temperature
        starts = np.cumsum([0] + lengths[:-1])
        top = np.maximum.reduceat(logits, starts)
        weights = np.exp(logits - np.repeat(top, lengths))
        return values, draws, weights / np.repeat(np.add.reduceat(weights, starts), lengths), bounds

    def centipawns(self, board: chess.Board) -> int:
        """The value head as centipawns (lets alpha-beta search with the network too)."""
        return value_centipawns(self, board)


def _slots_of(requests: Sequence[Request], count: int) -> np.ndarray:
    """The policy slots of the requests' moves end to end (``count`` of them): a compiled leaf's come as native
    int16 bytes (a batch is one search's, all of one kind), :meth:`ResNetEvaluator.prepare`'s as a list."""
    if requests and isinstance(requests[0].slots, bytes):  # type: ignore[attr-defined]
        return np.frombuffer(b"".join([r.slots for r in requests]), dtype=np.int16)  # type: ignore[attr-defined]
    return np.fromiter(chain.from_iterable(r.slots for r in requests),  # type: ignore[attr-defined]
                       dtype=np.int64, count=count)


def _close_calls(policy: np.ndarray, requests: Sequence[Request]) -> np.ndarray:
    """Rows of ``policy`` (one per request) whose two best legal moves are within :data:`MIXED_MARGIN` logits."""
    rows = [i for i, r in enumerate(requests) if r.moves and len(r.moves) > 1]
    if not rows:
        return np.zeros(0, dtype=np.int64)
    lengths = [len(requests[i].moves) for i in rows]
    slots = _slots_of([requests[i] for i in rows], sum(lengths))
    logits = policy[np.repeat(rows, lengths), slots]
    starts = np.cumsum([0] + lengths[:-1])
    best = np.maximum.reduceat(logits, starts)
    is_best = logits == np.repeat(best, lengths)
    second = np.maximum.reduceat(np.where(is_best, -np.inf, logits), starts)
    close = (np.add.reduceat(is_best, starts) > 1) | (best - second < MIXED_MARGIN)
    return np.asarray(rows, dtype=np.int64)[close]

