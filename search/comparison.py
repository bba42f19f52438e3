"""DeepChess's comparison alpha-beta: bounds are positions, not numbers.

alpha_pos is the best leaf White is already guaranteed, beta_pos the best
Black is; a leaf replaces alpha_pos when the comparator prefers it (for White),
and a node is cut when alpha_pos is preferred over beta_pos. Checkmates,
stalemates and rule draws are compared by rule, never by the network: a mate
beats every position (sooner mates beat later ones), a tablebase win beats
every position but loses to a mate, and a draw is as good as the starting
position, the comparator's picture of an even game.

The network only ever compares positions; everything else only orders or
deepens the search, each part switchable by a UCI option: the best move found
for the position before first (HashMove: a table keyed by the position's
hash), then captures that keep material, the killer moves (KillerMoves: quiet
moves that cut off at the same ply) and the children the comparator prefers
most to their parent (MoveOrdering: one batched comparison per node, or a
history of the quiet moves that cut off, which costs no comparison),
one more ply when the side to move is in check (CheckExtension), late quiet
moves a ply shallower unless that finds a better leaf (LateMoveReductions;
the latest two plies with DeeperReductions), the latest quiet moves not
searched at all one or two plies from the leaves (LateMovePruning),
a node cut when even passing keeps what the opponent will not allow
(NullMove), a node met again decided by the best leaf stored for its
position when that leaf, searched as deep, is exact or a bound beyond the
node's on its side (TranspositionTable), and captures resolved before a
leaf is judged (Quiescence).

With the shipped network (evaluators.comparator.ComparatorEvaluator) and the
compiled core built, each iteration runs in C (hackmate_core._ccomparison, see
ccsearch.h): the same search node for node, on the compiled board, with the
network's exact arithmetic and a table of every position's features; with
Threads 2 or more, from depth 4 on, a second thread takes root moves beside
it (the root split: then no longer node for node, nor the same run to run).
This module keeps iterative deepening, the stoppers, the tablebases' answers and
the reports on both paths. Otherwise (another comparator, a position the
compiled board does not take, HACKMATE_PURE_PYTHON=1) the search runs here:
the comparator reads a python-chess board, which the search therefore pushes;
where the compiled board is built a copy of it follows the same moves and
answers the rules instead: legal moves, checks and the end of the game
(docs/compiled-core.md).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Iterable, Optional

import chess
import numpy as np

from evaluators.base import Comparator, unwrap
from evaluators.comparator import ComparatorEvaluator
from hackmate_core import compiled
from hackmate_core.compiled import code_move, move_code
from hackmate_core.boards import transposition_key
from hackmate_core.lru import LruCache
from hackmate_core.options import Option
from hackmate_core.exchange import keeps_material, mvv_lva
from hackmate_core.rules import game_result, legal_moves
from hackmate_core.score import mated_score, mating_score, q_to_cp, q_to_wdl, score_wdl, tablebase_score
from search.alphabeta import _tablebase_probe
from search.base import Reporter, Search, SearchControl, SearchInfo, SearchResult, SearchStopped
from search.killers import Killers
from search.stoppers import Progress

MAX_PLY = 64
MAX_QUIESCENCE_PLIES = 8
#: Nodes between looks at the clock and `stop`.
CHECK_NODES_EVERY = 16
#: Late-move reductions: moves searched at full depth first, and the least remaining depth that is reduced.
FULL_DEPTH_MOVES = 3
REDUCTION_MIN_DEPTH = 3
#: Deeper reductions: from this move on, with at least this much depth to go, a late quiet move is searched two
#: plies shallower instead of one (at depth 8 on the bench positions: about half the nodes, the same moves but one).
DEEP_REDUCTION_MOVES = 6
DEEP_REDUCTION_MIN_DEPTH = 4
#: Null-move pruning: the least remaining depth that tries a null move, and the plies its search is shallower
#: than a move's (R, as material alpha-beta's).
NULL_MOVE_MIN_DEPTH = 3
NULL_MOVE_REDUCTION = 2
#: Late-move pruning: with 1 or 2 plies to go (the index), quiet moves from this one on that give no check are
#: not searched (the comparator has put them last among the quiet moves).
LATE_MOVE_PRUNING_MOVES = (0, 5, 8)
#: Values of the option MoveOrdering.
ORDERINGS = ("captures+comparator", "comparator", "captures", "captures+history")
#: Ordering keys of the killer moves (newest first): below every capture's (above 1), above the unordered rest's (0).
KILLER_KEYS = (0.75, 0.5)
#: Rough memory of one best-move table entry (an OrderedDict slot, its key: a tuple of bitboards, a move).
BEST_MOVE_BYTES = 500
#: The compiled search's table of features takes this share of the search's Hash (its best-move table, of the
#: same capacity as the Python one, takes far less memory than that one's estimate), up to FEATURE_TABLE_MB: a
#: table that fits the processor's last-level cache answers at once, a larger one waits for memory at each look-up
#: and costs more than its extra hits save.
FEATURE_SHARE = 1 / 3
FEATURE_TABLE_MB = 8
#: The transposition table (TranspositionTable) takes this share of Hash, at about TRANSPOSITION_BYTES an entry (the
#: leaf's features, its line), and keeps the first TRANSPOSITION_PV moves of each line.
TRANSPOSITION_SHARE = 1 / 2
TRANSPOSITION_BYTES = 1024
TRANSPOSITION_PV = 12
#: How a node's best leaf compares with the node's bounds: within them (EXACT), at least as good for the side to
#: move as its opponent's bound, which cut the node (LOWER: the node is worth at least that), or no better than
#: its own (UPPER: at most that).
EXACT, LOWER, UPPER = 1, 2, 3

#: A child searched with these bounds (alpha_pos, beta_pos) and remaining depth.
ChildSearch = Callable[["Leaf", "Leaf", Optional[np.ndarray], int], "Leaf"]


class Leaf:
    """A search result: a mate, a tablebase result, a draw, or a network position, and the line to it."""

    __slots__ = ("features", "mate_ply", "draw", "pv", "bound", "tablebase_ply")

    def __init__(self, features: Optional[np.ndarray], mate_ply: int = 0, draw: bool = False, pv: tuple = (),
                 bound: int = 0, tablebase_ply: int = 0) -> None:
        self.features = features
        self.mate_ply = mate_ply  # plies from the root to the mate, signed by the winner (> 0: White mates)
        self.draw = draw
        self.pv = pv
        self.bound = bound  # +1 / -1: the initial beta / alpha, better / worse for White than any real leaf
        self.tablebase_ply = tablebase_ply  # plies from the root to a tablebase win, signed by the winner

    def after(self, move: chess.Move) -> "Leaf":
        """The same leaf reached by ``move`` first."""
        return Leaf(self.features, self.mate_ply, self.draw, (move,) + self.pv, self.bound, self.tablebase_ply)


class ComparisonSearch(Search):
    name = "comparison"
    HELP = "alpha-beta over positions the comparator compares (DeepChess), needs comparator"
    EVALUATES_WITH = Comparator
    BENCH_NODES = 5000
    OPTIONS = (
        Option("Quiescence", "check", True, attribute="quiescence",
               help="resolve captures before the comparator judges a leaf"),
        Option("MoveOrdering", "combo", "captures+comparator", choices=ORDERINGS, attribute="move_ordering",
               help="after hash move, captures keeping material, killers: comparator (captures+comparator) or "
                    "cut-off history (captures+history); comparator only (comparator); all captures (captures)"),
        Option("HashMove", "check", True, attribute="hash_move",
               help="try first the position's earlier best move (a table sized by Hash)"),
        Option("CheckExtension", "check", True, attribute="check_extension", help="search one ply deeper in check"),
        Option("LateMoveReductions", "check", True, attribute="late_move_reductions",
               help="search late quiet moves a ply shallower, again fully if better"),
        Option("DeeperReductions", "check", True, attribute="deeper_reductions",
               help="with LateMoveReductions, the latest quiet moves two plies shallower"),
        Option("LateMovePruning", "check", True, attribute="late_move_pruning",
               help="one or two plies from the leaves, skip the latest quiet moves"),
        Option("HistoryNearLeaves", "check", True, attribute="history_near_leaves",
               help="where LateMovePruning applies, history orders the late moves"),
        Option("KillerMoves", "check", True, attribute="killer_moves",
               help="try early quiet moves that cut off at the same ply"),
        Option("NullMove", "check", True, attribute="null_move",
               help="skip moves where passing fails high"),
        Option("TranspositionTable", "check", True, attribute="transposition_table",
               help="reuse the best leaf of a position searched as deep before (half of Hash)"),
    )

    def __init__(self, comparator: Comparator) -> None:
        super().__init__(comparator)
        self.even: Optional[np.ndarray] = None
        self.seldepth = 0
        self.iteration_depth = 1
        #: The root's first move searched in the current iteration and its best leaf so far.
        self.root_first: Optional[chess.Move] = None
        self.root_best: Optional[Leaf] = None
        self.best_moves = LruCache(self.hash_mb, BEST_MOVE_BYTES)
        #: Transposition keys to (depth, EXACT / LOWER / UPPER, the best leaf's features and line).
        self.transpositions = LruCache(self.hash_mb * TRANSPOSITION_SHARE, TRANSPOSITION_BYTES)
        #: The root moves the search may play (searchmoves, tablebases), None for all.
        self.root_allowed: Optional[set[chess.Move]] = None
        #: The compiled board following the searched python-chess board, None on the pure-Python path.
        self.cboard: Any = None
        #: The compiled search and its tables, made at its first use (None: not yet, or searching in Python).
        self.searcher: Any = None
        #: Whether the last search ran compiled.
        self.searched_compiled = False
        #: Per ply, the last two quiet moves that cut off there (newest first), and per side to move the depth
        #: squared summed over the quiet moves that cut off, by from * 64 + to: both cleared by each search.
        self.killers = Killers(MAX_PLY)
        self.history: list[list[int]] = []
        self._clear_cut_offs()

    @property
    def comparator(self) -> Comparator:
        """The evaluator, by its interface's name (it compares positions rather than scoring one)."""
        return self.evaluator

    def set_hash(self, megabytes: float) -> None:
        super().set_hash(megabytes)
        self.best_moves.resize(megabytes)
        self.transpositions.resize(megabytes * TRANSPOSITION_SHARE)
        self.transpositions.clear()  # as the compiled table: a new size starts empty
        if self.searcher is not None:
            self.searcher.resize(self.best_moves.capacity, self._feature_table_mb(), self.transpositions.capacity)

    def new_game(self) -> None:
        self.best_moves.clear()
        self.transpositions.clear()
        if self.searcher is not None:
            self.searcher.clear()

    def hashfull(self) -> int:
        if self.searched_compiled and self.searcher is not None:
            return self.searcher.hashfull()
        return self.comparator.hashfull()

    # ---------------------------------------------------------- comparing

    def white_prefers(self, a: Leaf, b: Leaf) -> bool:
        """True if leaf ``a`` is better for White than leaf ``b``."""
        ka, kb = self._mate_rank(a), self._mate_rank(b)
        if ka is not None or kb is not None:
            return (ka if ka is not None else 0.0) > (kb if kb is not None else 0.0) if ka != kb else False
        fa = self.even if a.draw else a.features
        fb = self.even if b.draw else b.features
        if fa is fb:
            return False
        return self.comparator.prefers_first(fa, fb) > 0.5

    def _better(self, white: bool, a: Leaf, b: Leaf) -> bool:
        """True if leaf ``a`` is better than ``b`` for the side to move (White if ``white``)."""
        return self.white_prefers(a, b) if white else self.white_prefers(b, a)

    @staticmethod
    def _mate_rank(leaf: Leaf) -> Optional[float]:
        """Mates outrank everything, then tablebase wins; a quicker win outranks a slower one."""
        if leaf.bound:
            return leaf.bound * 1e9
        if leaf.mate_ply > 0:
            return 1000.0 - leaf.mate_ply
        if leaf.mate_ply < 0:
            return -1000.0 - leaf.mate_ply  # mate_ply < 0: a quicker loss ranks lower
        if leaf.tablebase_ply > 0:
            return 500.0 - leaf.tablebase_ply
        if leaf.tablebase_ply < 0:
            return -500.0 - leaf.tablebase_ply
        return None

    # -------------------------------------------------------------- driver

    def _clear_cut_offs(self) -> None:
        self.killers.clear()
        self.history = [[0] * 4096, [0] * 4096]  # [chess.BLACK], [chess.WHITE]

    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        board = board.copy()
        self.control = control
        self.nodes = 0
        self._clear_cut_offs()  # the compiled search clears its own in start()
        moves = self.root_moves(board, control).moves
        if not moves:
            return SearchResult(None)
        self.root_allowed = set(moves) if len(moves) < board.legal_moves.count() else None
        self.comparator.reset(chess.Board())
        self.even = self.comparator.features(chess.Board())
        self.comparator.reset(board)
        root_features = self.comparator.features(board)
        searcher = self._start_compiled(board, moves)
        self.searched_compiled = searcher is not None
        if searcher is not None:
            return self._deepen(board, moves, root_features, lambda depth: self._compiled_iteration(searcher, depth),
                                report)
        self.cboard = self._compiled_board(board)
        try:
            return self._deepen(board, moves, root_features, lambda depth: self._alphabeta(
                board, depth, 0, Leaf(None, bound=-1), Leaf(None, bound=1), root_features), report)
        finally:
            self.cboard = None  # it followed this search's board only

    def _deepen(self, board: chess.Board, moves: list[chess.Move], root_features: np.ndarray,
                iteration: Callable[[int], Leaf], report: Reporter) -> SearchResult:
        """Iterative deepening from ``board``, each iteration the root's best leaf at that depth from
        ``iteration`` (SearchStopped: stopped, ``root_first`` and ``root_best`` say how far it got)."""
        control = self.control
        best: Optional[Leaf] = None
        white = board.turn == chess.WHITE
        for depth in range(1, MAX_PLY + 1):
            self.seldepth = 0
            self.iteration_depth = depth
            self.root_first = self.root_best = None
            try:
                leaf = iteration(depth)
            except SearchStopped:
                # a stopped iteration that finished the last one's move first knows better, as far as it went;
                # a stopped first iteration's best root move so far is all there is
                if self.root_best is not None and (best is None or self.root_first == best.pv[0]):
                    best = self.root_best
                    self._report(report, depth, best, board, root_features)
                break
            best = leaf
            self._report(report, depth, leaf, board, root_features)
            won = leaf.mate_ply > 0 if white else leaf.mate_ply < 0
            proven = leaf.mate_ply != 0 and abs(leaf.mate_ply) < depth  # found within the full-width plies
            if control.should_stop(Progress(self.nodes, depth, len(moves), deepening=True, won=won, proven=proven)):
                break
        if best is None or not best.pv:
            return SearchResult(moves[0])
        return SearchResult(best.pv[0], best.pv[1] if len(best.pv) > 1 else None)

    # ------------------------------------------------------------- compiled

    def _start_compiled(self, board: chess.Board, moves: list[chess.Move]) -> Any:
        """The compiled search, started on ``board``, when the comparator is the network it computes and the
        position one the compiled board takes, else None."""
        network = self._compiled_network()
        if network is None or compiled.cboard is None:
            return None
        try:
            root = compiled.cboard.Board.from_board(board)
        except ValueError:  # a position the compiled board does not take
            return None
        if self.searcher is None or self.searcher.network is not network:
            self.searcher = compiled.ccomparison.Searcher(network, self.best_moves.capacity,
                                                          self._feature_table_mb(), self.transpositions.capacity)
        tablebase = self.tablebase
        self.searcher.start(root.state(), root.chess960, self._history_keys(root),
                            None if self.root_allowed is None else [move_code(move) for move in moves],
                            tablebase.max_pieces if tablebase is not None else 0)
        return self.searcher

    def _feature_table_mb(self) -> float:
        return min(self.hash_mb * FEATURE_SHARE, FEATURE_TABLE_MB)

    def _compiled_network(self) -> Any:
        """The comparator's network in C, when the comparator is the network that C computes exactly."""
        inner = unwrap(self.comparator)
        return inner.compiled if type(inner) is ComparatorEvaluator else None

    @staticmethod
    def _history_keys(root: Any) -> list[int]:
        """Transposition keys of the game's positions before ``root`` (a compiled board with the game's moves)
        since the last irreversible move, oldest first: what repetitions are found in."""
        replay = root.copy()
        keys = []
        for _ in range(min(replay.halfmove_clock, replay.ply)):
            replay.pop()
            keys.append(replay.key)
        keys.reverse()
        return keys

    def _compiled_iteration(self, searcher: Any, depth: int) -> Leaf:
        """One iteration in C at ``depth``, with the options as they are now."""
        options = (self.quiescence, ORDERINGS.index(self.move_ordering), self.hash_move, self.check_extension,
                   self.late_move_reductions, self.killer_moves, self.null_move, self.deeper_reductions,
                   self.late_move_pruning, self.history_near_leaves, self.transposition_table)
        tablebase = self.tablebase
        try:
            result = searcher.search(depth, options, self.control.stopped,
                                     None if tablebase is None else _tablebase_probe(tablebase), self.threads)
        finally:
            self.nodes, self.seldepth = searcher.nodes, searcher.seldepth
        if result is None:
            first, best = searcher.root_first, searcher.root_best()
            self.root_first = None if first is None else code_move(first)
            self.root_best = None if best is None else self._compiled_leaf(best)
            raise SearchStopped
        return self._compiled_leaf(result)

    @staticmethod
    def _compiled_leaf(leaf: tuple) -> Leaf:
        """A leaf of the compiled search: (bound, mate_ply, draw, tablebase_ply, features bytes or None, pv)."""
        bound, mate_ply, draw, tablebase_ply, features, pv = leaf
        return Leaf(None if features is None else np.frombuffer(features, np.float32).reshape(2, -1), mate_ply,
                    draw, tuple(code_move(code) for code in pv), bound, tablebase_ply)

    @staticmethod
    def _compiled_board(board: chess.Board) -> Any:
        """The compiled copy of ``board`` with its history (repetitions), or None where it is not built or the
        position is one it does not take."""
        if compiled.cboard is None:
            return None
        try:
            return compiled.cboard.Board.from_board(board)
        except ValueError:
            return None

    def _report(self, report: Reporter, depth: int, leaf: Leaf, board: chess.Board, root: np.ndarray) -> None:
        white = board.turn == chess.WHITE
        if leaf.mate_ply:
            plies = abs(leaf.mate_ply)
            score = mating_score(plies) if (leaf.mate_ply > 0) == white else mated_score(plies)
            wdl = score_wdl(score)
        elif leaf.tablebase_ply:
            score = tablebase_score(1 if (leaf.tablebase_ply > 0) == white else -1, abs(leaf.tablebase_ply))
            wdl = score_wdl(score)
        elif leaf.draw:
            score, wdl = 0, score_wdl(0)
        else:
            # pseudo-score: how sure the comparator is that the expected leaf is better than the root
            p_white = self.comparator.prefers_first(leaf.features, root)
            q = (2 * p_white - 1) * (1 if white else -1)
            score, wdl = q_to_cp(q), q_to_wdl(q)
        report(SearchInfo(depth=depth, seldepth=max(depth, self.seldepth), nodes=self.nodes,
                          time_s=self.control.elapsed(), pv=list(leaf.pv), score=score, wdl=wdl,
                          hashfull=self.hashfull(), tbhits=self.tbhits()))

    # -------------------------------------------------------------- search

    def _legal_moves(self, board: chess.Board) -> list[chess.Move]:
        """The legal moves in python-chess's order."""
        if self.cboard is None:
            return legal_moves(board)
        return [code_move(code) for code in self.cboard.legal_moves()]

    def _in_check(self, board: chess.Board) -> bool:
        """Whether the side to move is in check."""
        return board.is_check() if self.cboard is None else self.cboard.is_check()

    def _push(self, board: chess.Board, move: chess.Move) -> None:
        """Make ``move``, or pass for ``chess.Move.null()`` (as ``board.push`` does)."""
        if self.cboard is not None:
            if move:
                self.cboard.push(move_code(move))
            else:
                self.cboard.push_null()
        self.comparator.push(board, move)

    def _pop(self, board: chess.Board) -> None:
        self.comparator.pop(board)
        if self.cboard is not None:
            self.cboard.pop()

    def _terminal(self, board: chess.Board, ply: int, moves: Optional[list[chess.Move]]) -> Optional[Leaf]:
        """A mate, a draw by rule or a tablebase result; at the root only the end of the game counts.

        ``moves`` are the legal moves, or None at a leaf, which needs only to know whether one exists.
        """
        if ply == 0 and moves:
            return None
        if self.cboard is not None:
            result = self.cboard.result(ply)
        else:
            result = game_result(board, moves if moves is not None else board.legal_moves, ply)  # type: ignore
        if result is not None:
            return Leaf(None, mate_ply=ply if board.turn == chess.BLACK else -ply) if result < 0 else \
                Leaf(None, draw=True)
        if self.tablebase is not None:
            result = self.tablebase.probe_result(board)
            if result == 0:
                return Leaf(None, draw=True)
            if result is not None:
                white_wins = (result > 0) == (board.turn == chess.WHITE)
                return Leaf(None, tablebase_ply=ply if white_wins else -ply)
        return None

    def _count_node(self, ply: int) -> None:
        self.nodes += 1
        if self.nodes % CHECK_NODES_EVERY == 0 and self.control.stopped(self.nodes):
            raise SearchStopped
        if ply > self.seldepth:
            self.seldepth = ply

    def _alphabeta(self, board: chess.Board, depth: int, ply: int, alpha: Leaf, beta: Leaf,
                   features: Optional[np.ndarray]) -> Leaf:
        """The best leaf for the side to move; ``features`` are the position's, when the parent has them."""
        self._count_node(ply)
        if depth <= 0 or ply >= MAX_PLY:
            terminal = self._terminal(board, ply, None)  # a leaf asks only whether a move exists
            if terminal is not None:
                return terminal
            if self.quiescence and ply < MAX_PLY:
                return self._quiescence(board, ply, 0, alpha, beta, features)
            return Leaf(features if features is not None else self.comparator.features(board))
        moves = self._legal_moves(board)
        if ply == 0 and self.root_allowed is not None:
            moves = [move for move in moves if move in self.root_allowed]
        terminal = self._terminal(board, ply, moves)
        if terminal is not None:
            return terminal
        in_check = self._in_check(board)
        if in_check and self.check_extension and ply > 0 and ply + depth < 2 * self.iteration_depth:
            depth += 1
        key = transposition_key(board)  # exact: hash() would merge positions (evaluators/cache.py)
        transpose = self.transposition_table and ply > 0
        if transpose:
            stored = self._transposition(key, depth, board.turn == chess.WHITE, alpha, beta)
            if stored is not None:
                return stored
        if self.null_move:
            passed = self._null_move(board, depth, ply, in_check, alpha, beta)
            if passed is not None:
                return passed
        reducible = self.late_move_reductions and depth >= REDUCTION_MIN_DEPTH and not in_check
        prunable = self.late_move_pruning and ply > 0 and depth < len(LATE_MOVE_PRUNING_MOVES) and not in_check
        ordered, ready = self._ordered(board, moves, key, ply, near_leaves=prunable and self.history_near_leaves)
        child_features: list[Optional[np.ndarray]] = [None] * len(ordered)

        def finish_order() -> None:
            child_features[ready:] = self._finish_order(board, ordered, ready, features)

        best = self._expand(board, ordered, child_features, alpha, beta, None, reducible, depth,
                            lambda a, b, f, d: self._alphabeta(board, d, ply + 1, a, b, f), at_root=ply == 0,
                            unordered=(ready, finish_order), cut=lambda move: self._cut_off(board, move, ply, depth),
                            prune_from=LATE_MOVE_PRUNING_MOVES[depth] if prunable else 0)
        if best.pv:
            self.best_moves.put(key, best.pv[0])
        if transpose:
            self._store_transposition(key, depth, board.turn == chess.WHITE, alpha, beta, best)
        return best

    def _transposition(self, key: Hashable, depth: int, white: bool, alpha: Leaf, beta: Leaf) -> Optional[Leaf]:
        """The stored best leaf of this position (TranspositionTable) when it was searched at least ``depth``
        deep and decides the node: an exact leaf, or a bound beyond alpha_pos or beta_pos on its side (a LOWER
        leaf the opponent's bound does not beat cuts the node, as in :meth:`_expand`; an UPPER leaf no better
        than the side's own bound fails low). Else None, and the node is searched."""
        stored = self.transpositions.get(key)
        if stored is None or stored[0] < depth:
            return None
        kind, leaf = stored[1], stored[2]
        if kind == LOWER and not self._cuts(white, leaf, alpha, beta):
            return None
        if kind == UPPER and self._narrow(white, leaf, alpha, beta):
            return None
        return leaf

    def _store_transposition(self, key: Hashable, depth: int, white: bool, alpha: Leaf, beta: Leaf,
                             best: Leaf) -> None:
        """Keep ``best``, the node's best leaf searched ``depth`` deep between ``alpha`` and ``beta``, with how it
        compares with them, when it is a position (mates and tablebase results count plies from the root, and a
        draw may come from the path: a repetition)."""
        if best.features is None or best.bound:
            return
        kind = EXACT
        if not self._narrow(white, best, alpha, beta):
            kind = UPPER
        elif self._cuts(white, best, alpha, beta):
            kind = LOWER
        self.transpositions.put(key, (depth, kind, Leaf(best.features, pv=best.pv[:TRANSPOSITION_PV])))

    def _null_move(self, board: chess.Board, depth: int, ply: int, in_check: bool, alpha: Leaf,
                   beta: Leaf) -> Optional[Leaf]:
        """Null-move pruning (NullMove): the leaf of a pass that cuts the node, or None when the node must search
        its moves.

        If the side to move passes and the opponent, searched NULL_MOVE_REDUCTION plies shallower than after
        a move, still cannot bring the position below the bound the opponent holds elsewhere (the cut of
        :meth:`_expand`), some move is surely as good: the node fails high unsearched. Never in check
        (passing would leave the king in check), at the root (it must have a move), with only pawns and the
        king (zugzwang: passing there is often better than every move), right after a pass (two passes in a
        row search the same position again) or against the initial bound (nothing is as good as it, so no
        cut can follow); a pass that ends in a mate does not cut (the mate's distance counts the pass).

        The leaf comes back without its line: the moves after the pass are no line from here. The parent does
        not choose it (for the parent it is no better than what the parent holds elsewhere); at most the
        parent returns it as the bound of a node that fails low, its line then just the parent's move to this
        node, a legal one. Nothing goes to the best-move table: no move of this node was searched.
        """
        white = board.turn == chess.WHITE
        pieces = board.occupied_co[board.turn] & ~(board.pawns | board.kings)
        if (in_check or ply == 0 or depth < NULL_MOVE_MIN_DEPTH or not board.peek() or (beta if white else alpha).bound
                or not pieces):
            return None
        self._push(board, chess.Move.null())
        try:
            leaf = self._alphabeta(board, depth - 1 - NULL_MOVE_REDUCTION, ply + 1, alpha, beta, None)
        finally:
            self._pop(board)
        if leaf.mate_ply or not self._narrow(white, leaf, alpha, beta):
            return None
        if not self._cuts(white, leaf, alpha, beta):
            return None
        return Leaf(leaf.features, 0, leaf.draw, (), 0, leaf.tablebase_ply)

    def _ordered(self, board: chess.Board, moves: list[chess.Move], key: Hashable, ply: int,
                 near_leaves: bool = False) -> tuple[list[chess.Move], int]:
        """The moves best first, the first ``ready`` of them (the second value) in their final places.

        The stored best move comes first. ``captures+comparator`` and
        ``captures+history`` put next the captures that do not lose material
        (most valuable victim first), ``captures`` every capture; then, with
        KillerMoves, the ply's killers that are legal quiet moves here (newest
        first), all of them above every move the comparator orders, whose keys
        are probabilities (at most 1). ``captures`` leaves the other moves as
        generated, ``captures+history`` orders them at once by the history of
        cut-offs (highest first, ties as generated), as do the comparator's
        orderings where ``near_leaves`` (HistoryNearLeaves, at the nodes that
        late-move pruning thins: the moves it skips then cost no features). The
        comparator orders the other moves (:meth:`_finish_order`) when the
        search gets to them, which a cut-off on one of the first often spares:
        a stable sort, so the order is the one all keys known at once would give.
        """
        hash_move = self.best_moves.get(key) if self.hash_move else None
        ordering = self.move_ordering  # read once: the UCI thread may change it during a search
        killers = self.killers.at(ply) if self.killer_moves else [None, None]

        def key_of(move: chess.Move) -> float:
            if move == hash_move:
                return 3.0
            capture = board.is_capture(move)
            if capture and (ordering == "captures" or ordering != "comparator" and keeps_material(board, move)):
                return 1.0 + mvv_lva(board, move) / 100  # above every key below (at most 1)
            if not capture and move in killers:
                return KILLER_KEYS[killers.index(move)]
            return 0.0  # ordered later, by the comparator or the history, or left as generated
        keys = [key_of(move) for move in moves]
        order = sorted(range(len(moves)), key=keys.__getitem__, reverse=True)
        ordered = [moves[i] for i in order]
        ready = sum(1 for value in keys if value > 0)
        by_history = ordering == "captures+history" or near_leaves and ordering != "captures"
        if by_history:
            history = self.history[board.turn]
            ordered[ready:] = sorted(ordered[ready:], key=lambda move: history[move.from_square * 64 + move.to_square],
                                     reverse=True)
        return ordered, len(moves) if ordering == "captures" or by_history else ready

    def _cut_off(self, board: chess.Board, move: chess.Move, ply: int, depth: int) -> None:
        """``move`` cut the node at ``ply`` with ``depth`` to go: a quiet one becomes the ply's newest killer
        and earns depth squared in the history."""
        if move.promotion is not None or board.is_capture(move):
            return
        self.killers.remember(ply, move)
        self.history[board.turn][move.from_square * 64 + move.to_square] += depth * depth

    def _finish_order(self, board: chess.Board, moves: list[chess.Move], ready: int,
                      features: Optional[np.ndarray]) -> list[np.ndarray]:
        """Puts ``moves[ready:]`` in order by how much the comparator prefers each child to the position itself
        (``features``, when the parent has them): one batched comparison with the same reference for all children,
        ties as generated. Returns the features of those children, in that order."""
        rest = moves[ready:]
        children = self.comparator.child_features(board, rest)
        parent = features if features is not None else self.comparator.features(board)
        preference = np.asarray(self.comparator.prefers_first_many(children, parent), dtype=np.float64)
        if board.turn == chess.BLACK:
            preference = 1.0 - preference
        order = np.argsort(-preference, kind="stable").tolist()
        moves[ready:] = [rest[i] for i in order]
        return [children[i] for i in order]

    def _quiescence(self, board: chess.Board, ply: int, qply: int, alpha: Leaf, beta: Leaf,
                    features: Optional[np.ndarray] = None) -> Leaf:
        """Captures only, so that the comparator (trained on quiet positions) judges quiet ones.

        The side to move may stand pat on the current position; in check it must
        answer with any legal move, and a position with no answer is mate.
        """
        if qply > 0:
            self._count_node(ply)
        child: ChildSearch = lambda a, b, f, d: self._quiescence(board, ply + 1, qply + 1, a, b)  # noqa: E731
        if self._in_check(board):
            moves = self._legal_moves(board)
            if not moves:
                return Leaf(None, mate_ply=ply if board.turn == chess.BLACK else -ply)
            if qply >= MAX_QUIESCENCE_PLIES or ply >= MAX_PLY:
                return Leaf(features if features is not None else self.comparator.features(board))
            moves.sort(key=lambda m: mvv_lva(board, m) if board.is_capture(m) else -100, reverse=True)
            return self._expand(board, moves, None, alpha, beta, None, False, 0, child)
        stand_pat = Leaf(features if features is not None else self.comparator.features(board))
        if qply >= MAX_QUIESCENCE_PLIES or ply >= MAX_PLY:
            return stand_pat
        white = board.turn == chess.WHITE
        if self._narrow(white, stand_pat, alpha, beta):
            alpha, beta = (stand_pat, beta) if white else (alpha, stand_pat)
            if not self.white_prefers(beta, alpha):
                return stand_pat  # cut before the captures are even generated
        return self._expand(board, self._promising_captures(board), None, alpha, beta, stand_pat, False, 0, child)

    def _promising_captures(self, board: chess.Board) -> list[chess.Move]:
        """Captures that do not lose material by static exchange, most valuable victim first."""
        promising = [move for move in self._legal_captures(board) if keeps_material(board, move)]
        return sorted(promising, key=lambda m: mvv_lva(board, m), reverse=True)

    def _legal_captures(self, board: chess.Board) -> Iterable[chess.Move]:
        """``board.generate_legal_captures()``: the same moves in the same order, the side to move not in check.

        The compiled board's legal moves keep python-chess's order, captures included, and a pawn's legal
        move to the en-passant square can only be the capture.
        """
        if self.cboard is None:
            return board.generate_legal_captures()
        them, pawns, en_passant = board.occupied_co[not board.turn], board.pawns, board.ep_square
        return [code_move(code)
                for code in self.cboard.legal_moves()
                if them >> (code >> 6 & 63) & 1 or (code >> 6 & 63) == en_passant and pawns >> (code & 63) & 1]

    def _expand(self, board: chess.Board, moves: list[chess.Move],
                child_features: Optional[list[Optional[np.ndarray]]], alpha: Leaf, beta: Leaf, best: Optional[Leaf],
                reducible: bool, depth: int, child: ChildSearch, at_root: bool = False,
                unordered: Optional[tuple[int, Callable[[], None]]] = None,
                cut: Optional[Callable[[chess.Move], None]] = None, prune_from: int = 0) -> Leaf:
        """Search ``moves`` with ``child``, keeping the side to move's best leaf.

        ``best`` is a stand-pat leaf (quiescence, the bounds already narrowed
        by it) or None; a node is cut as soon as alpha_pos is no longer worse
        for White than beta_pos, which can only change when the best leaf does.
        With ``reducible``, the late quiet moves are searched a ply shallower
        (DeeperReductions: the latest, two plies) first and again at full
        depth only when that finds a leaf better than the best. ``at_root``
        keeps the best so far for a stopped iteration.
        ``unordered`` (index, function): the function puts the moves from that
        index on in order, and their features in ``child_features``, once the
        search gets there. ``cut`` is told the move that cut the node, if one
        does: a cut-off is the break below, alpha_pos preferred over beta_pos.
        ``prune_from`` (LateMovePruning): quiet moves from that index on that
        give no check are skipped; 0 skips none.
        """
        white = board.turn == chess.WHITE
        for index in range(len(moves)):
            if unordered is not None and index == unordered[0]:
                unordered[1]()
            move = moves[index]
            features = child_features[index] if child_features is not None else None
            quiet = (reducible or prune_from) and move.promotion is None and not board.is_capture(move)
            reduce = 0
            if reducible and index >= FULL_DEPTH_MOVES and quiet:
                deeper = self.deeper_reductions and index >= DEEP_REDUCTION_MOVES and depth >= DEEP_REDUCTION_MIN_DEPTH
                reduce = 2 if deeper else 1
            self._push(board, move)
            try:
                if prune_from and index >= prune_from and quiet and not self._in_check(board):
                    continue
                if reduce and self._in_check(board):
                    reduce = 0
                leaf = child(alpha, beta, features, depth - 1 - reduce)
                improves = best is None or self._better(white, leaf, best)
                if reduce and improves:
                    leaf = child(alpha, beta, features, depth - 1)
                    improves = best is None or self._better(white, leaf, best)
            finally:
                self._pop(board)
            if not improves:
                continue
            best = leaf.after(move)
            if at_root:
                if self.root_first is None:
                    self.root_first = move
                self.root_best = best
            if self._narrow(white, best, alpha, beta):
                alpha, beta = (best, beta) if white else (alpha, best)
                if not self.white_prefers(beta, alpha):
                    if cut is not None:
                        cut(move)
                    break  # the side to move already has something the opponent will not allow
        assert best is not None
        return best

    def _narrow(self, white: bool, best: Leaf, alpha: Leaf, beta: Leaf) -> bool:
        """True if ``best`` improves the side to move's bound (alpha_pos for White, beta_pos for Black)."""
        return self.white_prefers(best, alpha) if white else self.white_prefers(beta, best)

    def _cuts(self, white: bool, leaf: Leaf, alpha: Leaf, beta: Leaf) -> bool:
        """True if ``leaf`` would cut the node: the opponent's bound (beta_pos for White, alpha_pos for Black) is no
        better for the opponent than it (the cut of :meth:`_expand` once the leaf is the side's bound)."""
        return not (self.white_prefers(beta, leaf) if white else self.white_prefers(leaf, alpha))
