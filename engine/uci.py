"""The UCI protocol front-end.

The input thread parses commands; each `go` runs the search in a worker thread
so that `stop`, `isready`, `ponderhit` and `quit` are answered at once. Nothing
the GUI sends may crash or hang the engine: problems are reported as
`info string` lines and the engine stays in a valid state.
"""

from __future__ import annotations

import random
import sys
import threading
import traceback
from typing import Any, Callable, Optional, TextIO

import chess
import chess.polyglot

from engine import AUTHOR, NAME, __version__
from engine.backends import (DEFAULT_EVALUATOR, EVALUATOR_NAMES, NATURAL_SEARCH, SEARCH_NAMES, AnyEvaluator,
                             BackendError, build_evaluator, build_search)
from engine.options import OptionError, OptionSet, UciOption
from engine.timeman import GoParams, allocate
from evaluators.base import LoadError
from search.base import Search, SearchControl, SearchInfo, SearchResult
from search.tablebase import Tablebase

STANDARD_OPTIONS = [
    UciOption("Hash", "spin", 16, 1, 4096),
    UciOption("Threads", "spin", 1, 1, 1),  # honest: the search is single-threaded
    UciOption("MultiPV", "spin", 1, 1, 64),
    UciOption("Move Overhead", "spin", 50, 0, 5000),
    UciOption("Ponder", "check", False),
    UciOption("UCI_ShowWDL", "check", False),
    UciOption("SyzygyPath", "string", ""),
    UciOption("OwnBook", "check", False),
    UciOption("BookFile", "string", ""),
    UciOption("Weights", "string", ""),
    UciOption("Clear Hash", "button"),
]
#: Options whose change means building a new evaluator/search pair.
BACKEND_OPTIONS = {"Evaluator", "Search", "Weights"}


def format_info(info: SearchInfo, show_wdl: bool) -> str:
    """A Stockfish-style `info` line."""
    parts = [f"info depth {info.depth} seldepth {info.seldepth} multipv {info.multipv}"]
    if info.mate is not None:
        parts.append(f"score mate {info.mate}")
    else:
        parts.append(f"score cp {info.score_cp}")
    if info.bound:
        parts.append(info.bound)
    if show_wdl and info.wdl is not None:
        parts.append("wdl {} {} {}".format(*info.wdl))
    nps = int(info.nodes / info.time_s) if info.time_s > 0 else 0
    parts.append(f"nodes {info.nodes} nps {nps}")
    if info.hashfull is not None:
        parts.append(f"hashfull {info.hashfull}")
    parts.append(f"time {int(info.time_s * 1000)}")
    if info.pv:
        parts.append("pv " + " ".join(move.uci() for move in info.pv))
    return " ".join(parts)


def parse_go(tokens: list[str]) -> GoParams:
    """Parse the words after `go`; unknown words are ignored, bad numbers raise ValueError."""
    params = GoParams()
    int_fields = {"wtime", "btime", "winc", "binc", "movestogo", "movetime", "depth", "nodes", "mate"}
    i = 0
    while i < len(tokens):
        word = tokens[i]
        if word in int_fields and i + 1 < len(tokens):
            setattr(params, word, max(0, int(tokens[i + 1])) if word not in ("wtime", "btime")
                    else int(tokens[i + 1]))
            i += 2
            continue
        if word == "infinite":
            params.infinite = True
        elif word == "ponder":
            params.ponder = True
        elif word == "searchmoves":
            params.searchmoves = []
            i += 1
            while i < len(tokens) and tokens[i] not in int_fields | {"infinite", "ponder"}:
                params.searchmoves.append(tokens[i])
                i += 1
            continue
        i += 1
    return params


def parse_position(tokens: list[str], report: Callable[[str], None]) -> Optional[chess.Board]:
    """Board for `position startpos|fen ... [moves ...]`; None if the base position is invalid.

    Moves are applied until the first illegal one, which is reported.
    """
    if not tokens:
        report("position needs startpos or fen")
        return None
    moves_at = tokens.index("moves") if "moves" in tokens else len(tokens)
    if tokens[0] == "startpos":
        board = chess.Board()
    elif tokens[0] == "fen":
        fields = tokens[1:moves_at]
        defaults = ["w", "-", "-", "0", "1"]
        if not fields:
            report("position fen needs a FEN")
            return None
        fields = fields + defaults[len(fields) - 1:] if len(fields) < 6 else fields[:6]
        fen = " ".join(fields)
        try:
            board = chess.Board(fen)
        except ValueError as error:
            report(f"invalid FEN {fen!r}: {error}")
            return None
        status = board.status()
        if status & ~(chess.STATUS_TOO_MANY_CHECKERS | chess.STATUS_IMPOSSIBLE_CHECK) != chess.STATUS_VALID:
            report(f"illegal position in FEN {fen!r} ({status!r})")
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


class UciEngine:
    """The engine's state between commands, and the command dispatcher."""

    def __init__(self, evaluator: str = DEFAULT_EVALUATOR, search: Optional[str] = None,
                 weights: Optional[str] = None, output: TextIO = sys.stdout) -> None:
        self.output = output
        self._write_lock = threading.Lock()
        self.options = OptionSet(STANDARD_OPTIONS + [
            UciOption("Evaluator", "combo", evaluator, choices=EVALUATOR_NAMES),
            UciOption("Search", "combo", search or NATURAL_SEARCH.get(evaluator, "alphabeta"),
                      choices=SEARCH_NAMES)])
        if weights:
            self.options.values["Weights"] = weights
        self.board = chess.Board()
        self.evaluator: Optional[AnyEvaluator] = None
        self.search: Optional[Search] = None
        self.backend_dirty = True
        self.tuning: dict[str, Any] = {}  # evaluator/search options set by the GUI
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

    # --------------------------------------------------------------- backends

    def ensure_backend(self) -> None:
        """Build the evaluator/search pair if options changed; fall back to material on failure."""
        if not self.backend_dirty and self.search is not None:
            return
        name = self.options.get("Evaluator")
        search_name = self.options.get("Search")
        weights = self.options.get("Weights") or None
        try:
            evaluator = build_evaluator(name, weights)
        except (LoadError, BackendError, OSError, ImportError) as error:
            self.info_string(f"cannot load evaluator {name}: {error}; falling back to material")
            evaluator = build_evaluator("material")
            search_name = "alphabeta"
        try:
            search = build_search(search_name, evaluator)
        except BackendError as error:
            natural = NATURAL_SEARCH[evaluator.name]
            self.info_string(f"{error}; using search {natural}")
            search = build_search(natural, evaluator)
        self.evaluator, self.search = evaluator, search
        self.backend_dirty = False
        search.set_hash(self.options.get("Hash"))
        evaluator.set_cache_size(self.options.get("Hash"))
        search.multipv = self.options.get("MultiPV")
        search.tablebase = self.tablebase
        for option in self.tuning_options():
            if option.name in self.tuning:
                self._apply_tuning(option.name, self.tuning[option.name])

    def tuning_options(self) -> list[UciOption]:
        """Options of the current evaluator and search, as UCI options."""
        result = []
        for source in (self.evaluator, self.search):
            for o in source.options() if source is not None else []:
                result.append(UciOption(o.name, o.kind, o.default, o.minimum, o.maximum))
        return result

    def _apply_tuning(self, name: str, value: Any) -> None:
        for source in (self.evaluator, self.search):
            if source is not None and any(o.name == name for o in source.options()):
                source.set_option(name, value)

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
            self.info_string(f"error in {command!r}: {error}")
            for text in traceback.format_exc().splitlines():
                print(text, file=sys.stderr)
            return True

    def run(self, stream: TextIO = sys.stdin) -> None:
        for line in stream:
            if not self.handle(line):
                break
        else:
            self.cmd_quit([])

    def cmd_uci(self, args: list[str]) -> None:
        self.ensure_backend()
        self.send(f"id name {NAME} {__version__}")
        self.send(f"id author {AUTHOR}")
        for option in list(self.options) + self.tuning_options():
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
        tuning = {o.name.lower(): o for o in self.tuning_options()}
        try:
            if name.lower() in tuning:
                option = tuning[name.lower()]
                value = option.parse(raw)
                self.tuning[option.name] = value
                if self.searching():
                    self.info_string(f"{option.name} takes effect at the next search")
                    self.backend_dirty = True
                else:
                    self._apply_tuning(option.name, value)
                return
            canonical, value = self.options.set(name, raw)
        except OptionError as error:
            self.info_string(str(error))
            return
        self._on_option(canonical, value)

    def _on_option(self, name: str, value: Any) -> None:
        if name in BACKEND_OPTIONS:
            self.backend_dirty = True
        elif name == "Clear Hash":
            if self.search is not None and not self.searching():
                self.search.new_game()
        elif name == "Hash" and self.search is not None and not self.searching():
            self.search.set_hash(value)
            if self.evaluator is not None:
                self.evaluator.set_cache_size(value)
        elif name == "MultiPV" and self.search is not None:
            self.search.multipv = value
        elif name == "SyzygyPath":
            self.tablebase = None
            if value:
                try:
                    self.tablebase = Tablebase(value)
                    self.info_string(f"Syzygy tables up to {self.tablebase.max_pieces} pieces loaded")
                except (OSError, FileNotFoundError) as error:
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
                except OSError as error:
                    self.info_string(f"cannot open book {value!r}: {error}; book disabled")

    def cmd_ucinewgame(self, args: list[str]) -> None:
        self.finish_search()
        self.ensure_backend()
        assert self.search is not None and self.evaluator is not None
        self.search.new_game()
        self.evaluator.new_game()
        self.board = chess.Board()

    def cmd_position(self, args: list[str]) -> None:
        board = parse_position(args, self.info_string)
        if board is not None:
            self.board = board

    def cmd_go(self, args: list[str]) -> None:
        try:
            params = parse_go(args)
        except ValueError as error:
            self.info_string(f"bad go command: {error}")
            return
        self.finish_search()
        self.ensure_backend()
        board = self.board.copy()
        control = self._make_control(params, board)
        self.control = control
        book_move = self._book_move(board) if not params.infinite else None
        self.thread = threading.Thread(target=self._search_worker, args=(board, control, params, book_move),
                                       name="search", daemon=True)
        self.thread.start()

    def _make_control(self, params: GoParams, board: chess.Board) -> SearchControl:
        infinite = params.infinite or not any(
            v is not None for v in (params.wtime, params.btime, params.movetime, params.depth, params.nodes,
                                    params.mate))
        control = SearchControl(max_depth=params.depth, max_nodes=params.nodes, mate_in=params.mate,
                                infinite=infinite and not params.ponder, pondering=params.ponder)
        budget = allocate(params, board.turn == chess.WHITE, self.options.get("Move Overhead"), board.ply())
        if budget is not None:
            if params.ponder:
                control.ponder_budget = budget
            else:
                control.soft_deadline = control.start + budget[0]
                control.hard_deadline = control.start + budget[1]
        return control

    def _book_move(self, board: chess.Board) -> Optional[chess.Move]:
        if not self.options.get("OwnBook") or not self.book_path:
            return None
        try:
            with chess.polyglot.open_reader(self.book_path) as reader:
                entry = reader.weighted_choice(board, random=random.Random())
                return entry.move
        except IndexError:
            return None
        except OSError as error:
            self.info_string(f"book error: {error}")
            return None

    def _search_worker(self, board: chess.Board, control: SearchControl, params: GoParams,
                       book_move: Optional[chess.Move]) -> None:
        result = SearchResult(None)
        show_wdl = self.options.get("UCI_ShowWDL")
        try:
            if book_move is not None:
                self.info_string(f"book move {book_move.uci()}")
                result = SearchResult(book_move)
            else:
                assert self.search is not None
                result = self._run_search(board, control, params, show_wdl)
        except Exception as error:
            self.info_string(f"search failed: {error}")
            traceback.print_exc(file=sys.stderr)
        if result.best_move is None or result.best_move not in board.legal_moves:
            result = SearchResult(next(iter(board.legal_moves), None))
        while control.must_wait_for_stop and not control.stop_event.is_set():
            control.stop_event.wait(0.005)
        line = "bestmove " + (result.best_move.uci() if result.best_move else "0000")
        if result.best_move is not None and result.ponder_move is not None:
            board.push(result.best_move)
            if result.ponder_move in board.legal_moves:
                line += " ponder " + result.ponder_move.uci()
        self.send(line)

    def _run_search(self, board: chess.Board, control: SearchControl, params: GoParams,
                    show_wdl: bool) -> SearchResult:
        assert self.search is not None
        if params.searchmoves:
            self.info_string("searchmoves is not supported; searching all moves")
        return self.search.search(board, control, lambda info: self.send(format_info(info, show_wdl)))

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
        """Stockfish-style bench of the current backend."""
        from engine.bench import run_bench
        self.finish_search()
        self.ensure_backend()
        run_bench(self.options.get("Evaluator"), self.options.get("Search"), self.options.get("Weights") or None,
                  out=self.send)


def main(evaluator: str, search: Optional[str], weights: Optional[str]) -> None:
    engine = UciEngine(evaluator, search, weights)
    engine.run()

