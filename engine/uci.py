"""The UCI protocol front-end.

The input thread parses commands; each `go` runs the search in a worker thread
so that `stop`, `isready`, `ponderhit` and `quit` are answered at once. Nothing
the GUI sends may crash or hang the engine: problems are reported as
`info string` lines and the engine stays in a valid state.

Time: the clock of a `go` runs from the moment the command is read (loading the
network at a first `go` counts), and every search answers at its hard deadline
within milliseconds. The engine process (``freeze_gc``) freezes the objects alive
at each `go` out of Python's cyclic garbage collector (:func:`gc.freeze`): a full
collection scans every tracked object, which over a large tree and cache takes
tens of milliseconds, longer than a move at 1+0.01.

Options apply at once, also while a search runs: tuning knobs are read by the
search as it goes, ``Hash``, ``Threads``, ``MultiPV``, ``SyzygyPath`` and
``Clear Hash`` swap or resize what the search uses. Only ``Evaluator``,
``Search`` and ``Weights`` build a new backend, at the next `isready`, `go`,
`ucinewgame` or `bench` after the search. `uci` lists the options of every
evaluator and search of the registry (:mod:`engine.backends`), whichever
backend runs, since a GUI reads them once: a value for another backend is kept
and applied when that backend is built.

The engine is easy to drive in-process: give it any text stream as
``output``, feed it lines with :meth:`UciEngine.handle` and wait for a search
with :meth:`UciEngine.wait`.
"""

from __future__ import annotations

import gc
import os
import random
import sys
import threading
import time
import traceback
from typing import Any, Callable, Optional, TextIO

import chess
import chess.polyglot

from engine import AUTHOR, NAME, __version__
from engine.backends import DEFAULT_EVALUATOR, AnyEvaluator, BackendError, apply_hash, registry
from engine.options import OptionSet
from engine.strength import RATED_TUNING, Strength, strength
from engine.timeman import GoParams, allocate
from hackmate_core import compiled, exchange, rules, score
from hackmate_core.fallback import STRICT_VARIABLE, StrictFallback, fall_back
from evaluators.base import LoadError
from hackmate_core.options import Option, OptionError
from hackmate_core.tablebase import Tablebase
from search.base import Search, SearchControl, SearchInfo, SearchResult

#: Numbers in `go` are clamped to this magnitude (a GUI's "huge" stays huge, arithmetic stays finite).
MAX_GO_NUMBER = 2 ** 53
#: The engine process's exit status when a fallback is taken under strict mode (EX_SOFTWARE: an internal error).
STRICT_EXIT_STATUS = 70


def format_info(info: SearchInfo, show_wdl: bool) -> str:
    """A Stockfish-style `info` line; every search's lines have the same fields in the same order:
    depth seldepth multipv score [bound] [wdl] nodes nps hashfull tbhits time pv."""
    kind, value = score.uci_score(info.score)
    parts = [f"info depth {info.depth} seldepth {info.seldepth} multipv {info.multipv} score {kind} {value}"]
    if info.bound:
        parts.append(info.bound)
    if show_wdl and info.wdl is not None:
        parts.append("wdl {} {} {}".format(*info.wdl))
    nps = int(info.nodes / info.time_s) if info.time_s > 0 else 0
    parts.append(f"nodes {info.nodes} nps {nps} hashfull {info.hashfull} tbhits {info.tbhits} "
                 f"time {int(info.time_s * 1000)}")
    if info.pv:
        parts.append("pv " + " ".join(move.uci() for move in info.pv))
    return " ".join(parts)


def parse_go(tokens: list[str]) -> GoParams:
    """Parse the words after `go`; unknown words are ignored, bad numbers raise ValueError."""
    params = GoParams()
    int_fields = {"wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes", "mate"}
    keywords = int_fields | {"infinite", "ponder", "searchmoves"}
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if word in int_fields and i + 1 < len(tokens):
            number = max(-MAX_GO_NUMBER, min(MAX_GO_NUMBER, int(tokens[i + 1])))
            setattr(params, word, number if word in ("wtime", "btime") else max(0, number))
            i += 2
            continue
        if word == "infinite":
            params.infinite = True
        elif word == "ponder":
            params.ponder = True
        elif word == "searchmoves":
            params.searchmoves = []
            i += 1
            while i < len(tokens) and tokens[i] not in keywords:
                params.searchmoves.append(tokens[i])
                i += 1
            continue
        i += 1
    return params


def status_words(status: chess.Status) -> str:
    """What is wrong with a position, in words: python-chess's status flags, e.g. "no white king, opposite check"."""
    return ", ".join(flag.name.replace("_", " ").lower() for flag in chess.Status  # type: ignore[union-attr]
                     if flag and status & flag)


def parse_position(tokens: list[str], report: Callable[[str], None], chess960: bool = False
                   ) -> Optional[chess.Board]:
    """Board for `position startpos|fen ... [moves ...]`; None if the base position is invalid.

    Moves are applied until the first illegal one, which is reported.
    """
    if not tokens:
        report("position needs startpos or fen")
        return None
    moves_at = tokens.index("moves") if "moves" in tokens else len(tokens)
    if tokens[0] == "startpos":
        board = chess.Board(chess960=chess960)
    elif tokens[0] == "fen":
        fields = tokens[1:moves_at]
        defaults = ["w", "-", "-", "0", "1"]
        if not fields:
            report("position fen needs a FEN")
            return None
        sent = " ".join(fields)  # quoted as the GUI sent it
        fields = fields + defaults[len(fields) - 1:] if len(fields) < 6 else fields[:6]
        try:
            board = chess.Board(" ".join(fields), chess960=chess960)
        except ValueError as error:
            report(f"invalid FEN '{sent}': {error}")
            return None
        status = board.status() & ~(chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK)
        if status != chess.STATUS_VALID:
            report(f"illegal position in FEN '{sent}': {status_words(status)}")
            return None
    else:
        report(f"position must start with startpos or fen, not {tokens[0]!r}")
        return None
    for text in tokens[moves_at + 1:]:
        try:
            move = board.parse_uci(text)
        except ValueError:
            report(f"illegal move {text!r} in position {board.fen()}; ignoring it and the moves after it")
            break
        board.push(move)
    return board


def fallback_move(board: chess.Board) -> Optional[chess.Move]:
    """The move played when a search fails: a mate in one, else the capture that wins most by
    static exchange, else a quiet move, else any legal move (None: there is none).

    A failed search is a bug, but the game goes on; this plays a move no worse than one ply of
    common sense instead of the first move generated.
    """
    moves = list(board.legal_moves)
    mate = rules.mate_in_one(board, moves)
    if mate is not None:
        return mate
    captures = [(exchange.see(board, move), move) for move in moves if board.is_capture(move)]
    best_capture = max(captures, key=lambda pair: pair[0], default=None)
    if best_capture is not None and best_capture[0] > 0:
        return best_capture[1]
    quiet = [move for move in moves if not board.is_capture(move) and exchange.see(board, move) >= 0]
    return (quiet or moves or [None])[0]


class UciEngine:
    """The engine's state between commands, and the command dispatcher."""

    def __init__(self, evaluator: str = DEFAULT_EVALUATOR, search: Optional[str] = None,
                 weights: Optional[str] = None, output: TextIO = sys.stdout, freeze_gc: bool = False,
                 exit_on_strict: bool = False) -> None:
        """``exit_on_strict``: a fallback under strict mode ends the process (the engine run by a GUI or a test
        harness); otherwise it is recorded in :attr:`strict_failures` for an in-process caller to check."""
        self.output = output
        self.freeze_gc = freeze_gc
        self.exit_on_strict = exit_on_strict
        #: The fallbacks taken under strict mode (hackmate_core.fallback), in order.
        self.strict_failures: list[str] = []
        self._write_lock = threading.Lock()
        self.registry = registry()
        self.options = OptionSet(self.registry.engine_options(evaluator, search))
        if weights:
            self.options.values["Weights"] = weights
        #: Every backend's tuning options by lower-case name (a GUI reads them once, whichever backend runs).
        self.declared_tuning = {option.name.lower(): option for option, _ in self.registry.tuning_options()}
        #: True once the GUI has set Search: from then on Evaluator alone keeps it.
        self.search_chosen = False
        self.board = chess.Board()
        self.evaluator: Optional[AnyEvaluator] = None
        self.search: Optional[Search] = None
        self.backend_dirty = True
        #: The evaluator and search the backend was built with (a fallback differs from the options).
        self.backend_names = ("", "")
        #: The Weights each evaluator loaded last: a value that does not load keeps them.
        self.loaded_weights: dict[str, str] = {}
        #: What UCI_LimitStrength, UCI_Elo, RatingNetworks and NodeLimit ask of the backend built last.
        self.strength = Strength(None, None)
        #: Tuning options set by the GUI (internal values), applied again to a rebuilt backend.
        self.tuning: dict[str, Any] = {}
        #: The same options as the GUI sent them (bench builds its own backend with them).
        self.tuning_text: dict[str, str] = {}
        #: The backend's notices as they stood when last told (a notice that goes away and comes back is told again).
        self.told_notices: set[str] = set()
        self.tablebase: Optional[Tablebase] = None
        self.book_path: Optional[str] = None
        self.thread: Optional[threading.Thread] = None
        self.control: Optional[SearchControl] = None

    # ---------------------------------------------------------------- output

    def send(self, line: str) -> None:
        with self._write_lock:
            self.output.write(line + "\n")
            self.output.flush()

    def info_string(self, text: str) -> None:
        for line in text.splitlines() or [""]:
            self.send("info string " + line)

    def fall_back(self, message: str) -> None:
        """Tell a fallback the engine takes to keep playing (:func:`hackmate_core.fallback.fall_back`). Under strict
        mode it is recorded, and the engine process exits with :data:`STRICT_EXIT_STATUS`, so that a test or a
        match that drives it fails instead of going on."""
        try:
            fall_back(self.info_string, message)
        except StrictFallback as failure:
            self.strict_failures.append(str(failure))
            if self.exit_on_strict:
                self.info_string(f"{STRICT_VARIABLE} is set: the engine exits on this fallback")
                print(f"strict mode: {failure}", file=sys.stderr, flush=True)
                os._exit(STRICT_EXIT_STATUS)

    # --------------------------------------------------------------- backends

    def ensure_backend(self) -> None:
        """Build the evaluator/search pair and read its weights if a backend option changed (at `isready`, `go`,
        `ucinewgame` and `bench`; `uci` needs no backend: the registry declares every option)."""
        if not self.backend_dirty and self.search is not None:
            return
        self.strength = strength(self.options.get("UCI_LimitStrength"), self.options.get("UCI_Elo"),
                                 self.options.get("RatingNetworks"), self.options.get("NodeLimit"))
        rated = self._load_rated(self.strength) if self.strength.weights is not None else None
        if self.strength.note:  # what _load_rated left: a rating network that does not load is a fallback too
            (self.fall_back if self.strength.fell_back else self.info_string)(self.strength.note)
        if rated is not None:
            evaluator, name, search_name = rated, DEFAULT_EVALUATOR, self.registry.natural_search(DEFAULT_EVALUATOR)
        else:
            evaluator, name = self._load_evaluator(self.options.get("Evaluator"), self.options.get("Weights"))
            search_name = self.options.get("Search") if name == self.options.get("Evaluator") \
                else self.registry.natural_search(name)
        try:
            search = self.registry.build_search(search_name, evaluator)
        except BackendError as error:
            search_name = self.registry.natural_search(name)
            self.fall_back(f"{error}; using search {search_name}")
            search = self.registry.build_search(search_name, evaluator)
        self.evaluator, self.search = evaluator, search
        self.backend_names = (name, search_name)
        self.backend_dirty = False
        threads = self.options.get("Threads")
        search.set_threads(threads)
        apply_hash(self.options.get("Hash"), search, evaluator)
        search.multipv = self.options.get("MultiPV")
        search.tablebase = self.tablebase
        for option in self.tuning_options():
            if option.name in self.tuning:
                self._apply_tuning(option.name, self.tuning[option.name])
        if rated is not None:
            for option_name, value in RATED_TUNING.items():
                self._apply_tuning(option_name, value)
        self._tell_notices()

    def _load_rated(self, asked: Strength) -> Optional[AnyEvaluator]:
        """The rating network ``asked`` names, in the default evaluator; None (said) where it does not load, and
        :attr:`strength` then keeps only the ``NodeLimit`` cap."""
        try:
            return self.registry.build_evaluator(DEFAULT_EVALUATOR, str(asked.weights), self.options.get("Threads"))
        except (BackendError, LoadError, OSError, ImportError) as error:
            self.strength = Strength(None, self.options.get("NodeLimit") or None,
                                     f"cannot load {asked.weights}: {error}; playing at full strength", True)
            return None

    def _load_evaluator(self, name: str, weights: str) -> tuple[AnyEvaluator, str]:
        """The evaluator ``name`` (its registry name returned too) with ``weights`` read. Weights that do not load
        keep those it loaded last, or its shipped network, and ``Weights`` says them again: a GUI may hide the
        `info string`, and a network that plays on is better than material. Material where even that fails."""
        kept = self.loaded_weights.get(name, "")
        try:
            evaluator = self.registry.build_evaluator(name, weights or None, self.options.get("Threads"))
        except BackendError as error:
            self.fall_back(f"{error}; falling back to material")
            return self.registry.build_evaluator("material"), "material"
        except (LoadError, OSError, ImportError) as error:
            if weights != kept:
                self.fall_back(f"cannot load Weights {weights!r}: {error}; keeping "
                               f"{repr(kept) if kept else 'the shipped network'}")
                self.options.values["Weights"] = kept
                return self._load_evaluator(name, kept)
            self.fall_back(f"cannot load evaluator {name}: {error}; falling back to material")
            return self.registry.build_evaluator("material"), "material"
        self.loaded_weights[name] = weights
        return evaluator, name

    def tuning_options(self) -> list[Option]:
        """Options of the current evaluator (with its wrappers) and search."""
        return [option for source in (self.evaluator, self.search) if source is not None
                for option in source.options()]

    def _apply_tuning(self, name: str, value: Any) -> None:
        for source in (self.evaluator, self.search):
            if source is not None and source.set_option(name, value):
                return

    def _tell_notices(self, only_new: bool = False) -> None:
        """The loaded backend's notices (settings it cannot honour as asked), as info strings, and its fallbacks as
        fallbacks; ``only_new``: those not among the ones last told (a later `setoption` of another knob does not
        repeat them)."""
        sources = [source for source in (self.evaluator, self.search) if source is not None]
        told: set[str] = set()
        for messages, tell in (([notice for source in sources for notice in source.notices()], self.info_string),
                               ([fallback for source in sources for fallback in source.fallbacks()], self.fall_back)):
            for message in messages:
                if not only_new or message not in self.told_notices:
                    tell(message)
            told.update(messages)
        self.told_notices = told

    # --------------------------------------------------------------- commands

    def handle(self, line: str) -> bool:
        """Execute one command line; returns False on `quit`."""
        tokens = line.strip().split()
        if not tokens:
            return True
        command, args = tokens[0], tokens[1:]
        try:
            handler = getattr(self, "cmd_" + command, None)
            if handler is None:
                self.info_string(f"unknown command: {line.strip()}")
                return True
            return handler(args) is not False
        except Exception as error:  # the GUI must never see a crash
            traceback.print_exc(file=sys.stderr)
            self.fall_back(f"error in {command!r}: {type(error).__name__}: {error}")
            return True

    def run(self, stream: TextIO = sys.stdin) -> None:
        for line in stream:
            if not self.handle(line):
                break
        else:
            self.cmd_quit([])

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Wait for the running search to finish by itself; True when none is running any more."""
        thread = self.thread
        if thread is not None:
            thread.join(timeout)
        return not self.searching()

    def cmd_uci(self, args: list[str]) -> None:
        self.send(f"id name {NAME} {__version__}")
        self.send(f"id author {AUTHOR}")
        for problem in self.registry.problems:
            self.info_string(problem)
        if compiled.why_not:  # a fallback unless HACKMATE_PURE_PYTHON asked for the pure path
            (self.info_string if compiled.FORCED_PURE_PYTHON else self.fall_back)(compiled.why_not)
        for option in list(self.options) + list(self.declared_tuning.values()):
            self.send(option.uci_line())
        self.send("uciok")

    def cmd_isready(self, args: list[str]) -> None:
        if not self.searching():
            self.ensure_backend()
        self.send("readyok")

    def cmd_debug(self, args: list[str]) -> None:
        """Accepted and ignored: the engine always logs problems as info strings."""

    def cmd_setoption(self, args: list[str]) -> None:
        if not args or args[0] != "name":
            self.info_string("usage: setoption name <name> [value <value>]")
            return
        words = args[1:]
        value_at = words.index("value") if "value" in words else len(words)
        name = " ".join(words[:value_at])
        raw = " ".join(words[value_at + 1:]) if value_at < len(words) else None
        try:
            option = self.declared_tuning.get(name.lower())
            if option is not None:
                value = option.parse(raw)
                self.tuning[option.name] = value
                self.tuning_text[option.name] = raw or ""
                self._apply_tuning(option.name, value)  # live if its backend runs (searches read knobs as they go)
                if self.evaluator is not None:
                    self._tell_notices(only_new=True)
                return
            option, value = self.options.set(name, raw)
        except OptionError as error:
            self.info_string(str(error))
            return
        self._on_option(option, value)

    def _on_option(self, option: Option, value: Any) -> None:
        """Apply an engine option; safe while a search runs (what it changes is swapped, not mutated)."""
        name = option.name
        if option.rebuild:
            self.backend_dirty = True
            if name == "Search":
                self.search_chosen = True
            elif name == "Evaluator" and not self.search_chosen:
                self.options.values["Search"] = self.registry.natural_search(value)
            if self.searching():
                self.info_string(f"{name} takes effect after the running search")
        elif name == "Clear Hash":
            if self.search is not None and self.evaluator is not None:
                self.search.new_game()
                self.evaluator.new_game()
        elif name == "Hash":
            if self.search is not None and self.evaluator is not None:
                apply_hash(value, self.search, self.evaluator)
        elif name == "Threads":
            if self.search is not None and self.evaluator is not None:
                self.evaluator.set_threads(value)
                self.search.set_threads(value)  # a search that shares them with the network splits them
        elif name == "MultiPV":
            if self.search is not None:
                self.search.multipv = value
        elif name == "SyzygyPath":
            self.tablebase = None
            if value:
                try:
                    self.tablebase = Tablebase(value)
                    self.info_string(f"Syzygy tables up to {self.tablebase.max_pieces} pieces loaded")
                except OSError as error:
                    self.info_string(f"{error}; tablebases disabled")
            if self.search is not None:
                self.search.tablebase = self.tablebase
        elif name == "BookFile":
            self.book_path = None
            if value:
                try:
                    with chess.polyglot.open_reader(value) as reader:
                        next(iter(reader.find_all(chess.Board())), None)
                    self.book_path = value
                except (OSError, ValueError) as error:
                    self.info_string(f"cannot open book {value!r}: {error}; book disabled")
        elif name == "UCI_Chess960":
            self.board.chess960 = value  # how castling moves are read and written from now on

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.finish_search()
        self.ensure_backend()
        assert self.search is not None and self.evaluator is not None
        self.search.new_game()
        self.evaluator.new_game()
        self.board = chess.Board(chess960=self.options.get("UCI_Chess960"))

    def cmd_position(self, args: list[str]) -> None:
        board = parse_position(args, self.info_string, self.options.get("UCI_Chess960"))
        if board is not None:
            self.board = board

    def go_perft(self, args: list[str]) -> None:
        """`go perft N` as Stockfish prints it: `move: count` for each legal move, a blank line, the total."""
        from hackmate_core import perft
        try:
            depth = int(args[0]) if len(args) == 1 else -1
        except ValueError:
            depth = -1
        if not 1 <= depth <= perft.MAX_DEPTH:
            self.info_string(f"usage: go perft N with N from 1 to {perft.MAX_DEPTH}, not {' '.join(args)!r}")
            return
        self.finish_search()
        counts = perft.divide(self.board, depth)
        for move, nodes in counts:
            self.send(f"{move.uci()}: {nodes}")
        self.send("")
        self.send(f"Nodes searched: {sum(nodes for _, nodes in counts)}")

    def cmd_go(self, args: list[str]) -> None:
        if args[:1] == ["perft"]:
            self.go_perft(args[1:])
            return
        received = time.monotonic()  # the GUI's clock runs from here, whatever comes before the search
        try:
            params = parse_go(args)
        except ValueError as error:
            self.info_string(f"bad go command: {error}")
            return
        self.finish_search()
        self.ensure_backend()
        if self.freeze_gc:
            gc.freeze()  # what lives now (the tree kept, the caches) is not scanned by collections during the move
        board = self.board.copy()
        control = self._make_control(params, board, received)
        self.control = control
        book_move = self._book_move(board) if not params.infinite and not control.searchmoves else None
        self.thread = threading.Thread(target=self._search_worker, args=(board, control, book_move),
                                       name="search", daemon=True)
        self.thread.start()

    def _make_control(self, params: GoParams, board: chess.Board, start: float) -> SearchControl:
        infinite = params.infinite or not any(
            v is not None for v in (params.wtime, params.btime, params.movetime, params.depth, params.nodes,
                                    params.mate))
        cap = self.strength.nodes if self.strength.weights is not None else self.options.get("NodeLimit") or None
        nodes = params.nodes if cap is None else min(cap, params.nodes if params.nodes is not None else cap)
        control = SearchControl(max_depth=params.depth, max_nodes=nodes, mate_in=params.mate,
                                infinite=infinite and not params.ponder, pondering=params.ponder, start=start,
                                searchmoves=self._searchmoves(params.searchmoves, board), note=self.info_string,
                                fixed_time=params.movetime is not None)
        budget = allocate(params, board.turn == chess.WHITE, self.options.get("Move Overhead"), board.ply())
        if budget is not None:
            if params.ponder:
                control.ponder_budget = budget
            else:
                control.soft_deadline = control.start + budget[0]
                control.hard_deadline = control.start + budget[1]
        return control

    def _searchmoves(self, texts: Optional[list[str]], board: chess.Board) -> Optional[list[chess.Move]]:
        """The legal moves among `go searchmoves`; illegal ones are reported and left out."""
        if not texts:
            return None
        moves = []
        for text in texts:
            try:
                moves.append(board.parse_uci(text))
            except ValueError:
                self.info_string(f"searchmoves: {text!r} is not a legal move here; ignored")
        if not moves:
            self.info_string("searchmoves: no legal move given; searching all moves")
        return moves or None

    def _book_move(self, board: chess.Board) -> Optional[chess.Move]:
        if not self.options.get("OwnBook") or not self.book_path or board.chess960:
            return None
        try:
            with chess.polyglot.open_reader(self.book_path) as reader:
                entry = reader.weighted_choice(board, random=random.Random())
                return entry.move
        except IndexError:
            return None
        except (OSError, ValueError) as error:
            self.info_string(f"book error: {error}")
            return None

    def _search_worker(self, board: chess.Board, control: SearchControl, book_move: Optional[chess.Move]) -> None:
        result = SearchResult(None)
        show_wdl = self.options.get("UCI_ShowWDL")
        try:
            if book_move is not None:
                self.info_string(f"book move {book_move.uci()}")
                result = SearchResult(book_move)
            else:
                assert self.search is not None
                result = self.search.search(board, control, lambda info: self.send(format_info(info, show_wdl)))
        except Exception as error:
            traceback.print_exc(file=sys.stderr)
            if self.search is not None:
                self.search.new_game()  # a half-updated tree or table must not be reused by the next search
            result = SearchResult(fallback_move(board))
            self.fall_back(f"search failed: {type(error).__name__}: {error}; playing "
                           f"{result.best_move.uci() if result.best_move else 'no move'} instead")
        if result.best_move is None and any(board.legal_moves) or \
                result.best_move is not None and result.best_move not in board.legal_moves:
            answered = result.best_move.uci() if result.best_move else "no move"
            result = SearchResult(fallback_move(board))
            self.fall_back(f"the search answered {answered}, not a legal move in {board.fen()}; playing "
                           f"{result.best_move.uci() if result.best_move else 'no move'} instead")
        while control.must_wait_for_stop and not control.stop_event.is_set():
            control.stop_event.wait(0.005)
        line = "bestmove " + (result.best_move.uci() if result.best_move else "0000")
        if result.best_move is not None and result.ponder_move is not None:
            board.push(result.best_move)
            if result.ponder_move in board.legal_moves:
                line += " ponder " + result.ponder_move.uci()
        self.send(line)

    def searching(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def finish_search(self) -> None:
        """Stop a running search (it prints its bestmove) and wait for the thread."""
        if self.thread is not None:
            if self.control is not None:
                self.control.stop()
            self.thread.join()
            self.thread = None

    def cmd_stop(self, args: list[str]) -> None:
        self.finish_search()

    def cmd_ponderhit(self, args: list[str]) -> None:
        if self.control is not None and self.searching():
            self.control.ponderhit()

    def cmd_quit(self, args: list[str]) -> bool:
        self.finish_search()
        return False

    # ------------------------------------------------------------ extensions

    def cmd_d(self, args: list[str]) -> None:
        """Show the current position (Stockfish's `d`)."""
        for row in str(self.board).splitlines():
            self.info_string(row)
        self.info_string(f"Fen: {self.board.fen()}")

    def cmd_bench(self, args: list[str]) -> None:
        """Stockfish-style bench of the current backend: `bench [nodes per position]`."""
        try:
            nodes = int(args[0]) if args else None
        except ValueError:
            self.info_string(f"usage: bench [nodes per position], not {' '.join(args)!r}")
            return
        if nodes is not None and nodes < 1:
            self.info_string("bench needs at least 1 node per position")
            return
        self.finish_search()
        self.ensure_backend()
        evaluator, search = self.backend_names
        # on the search thread, like a `go`: `stop`, `quit` and `isready` are answered while it runs
        self.control = SearchControl()
        settings = {name: text for name, text in self.tuning_text.items()
                    if any(option.name == name for option in self.tuning_options())}
        self.thread = threading.Thread(target=self._bench_worker, name="bench", daemon=True,
                                       args=(evaluator, search, nodes, settings, self.control.stop_event))
        self.thread.start()

    def _bench_worker(self, evaluator: str, search: str, nodes: Optional[int], settings: dict[str, str],
                      stop: threading.Event) -> None:
        from engine.bench import run_bench
        try:
            run_bench(evaluator, search, self.options.get("Weights") or None, nodes, out=self.send,
                      threads=self.options.get("Threads"), options=settings, stop=stop)
        except Exception as error:  # the GUI must never see a crash
            traceback.print_exc(file=sys.stderr)
            self.fall_back(f"error in 'bench': {type(error).__name__}: {error}")


def main(evaluator: str, search: Optional[str], weights: Optional[str]) -> None:
    engine = UciEngine(evaluator, search, weights, freeze_gc=True, exit_on_strict=True)
    engine.run()
