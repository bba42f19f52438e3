"""Classic alpha-beta for scalar evaluators.

Negamax with iterative deepening, principal-variation search, a Zobrist-keyed
transposition table, null-move pruning and late-move reductions, quiescence
on captures, move ordering (TT move, MVV-LVA, killers, history), check
extension, mate scores, tablebase scores and draw detection by rule
(repetition, fifty moves, insufficient material; see :mod:`hackmate_core.rules`).
The search keeps the Zobrist keys of the game and of its path, so repetitions
are found with :func:`hackmate_core.rules.repetition_draw_keys`, the fast form of
the shared repetition policy.

For the evaluations that are a table of centipawns per piece and square
(``material`` and ``pst``) each root search of an iteration runs in C
(``hackmate_core._calphabeta``, see cab.h): the same search node for node, many
times faster. This module keeps iterative deepening, MultiPV, the stoppers, the
tablebase root filter and the reports on both paths; other evaluators,
positions the compiled board does not take and ``HACKMATE_PURE_PYTHON=1`` search
in Python.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import chess
import chess.polyglot

from evaluators.base import Evaluator
from evaluators.material import PST, MaterialEvaluator, PstEvaluator
from hackmate_core import compiled
from hackmate_core.exchange import PIECE_VALUES, mvv_lva
from hackmate_core.rules import fifty_move_draw, insufficient_material, legal_moves, repetition_draw_keys
from hackmate_core.score import (MATE, MATE_BOUND, TB_BOUND, mate_in_moves, mated_score, mating_score, score_wdl,
                                 tablebase_score)
from hackmate_core.tablebase import Tablebase
from search.base import Reporter, Search, SearchControl, SearchInfo, SearchResult, SearchStopped
from search.killers import Killers
from search.stoppers import Progress
from search.tt import EXACT, LOWER, UPPER, TranspositionTable, slot_count

INF = MATE + 1
MAX_PLY = 128
#: Nodes between looks at the clock and `stop` (a node takes tens of microseconds; a network's, milliseconds).
CHECK_NODES_EVERY = 16
#: The compiled search counts nodes in 64 bits: larger budgets are this one (years of searching).
MAX_NODES = 1 << 62


def compiled_evaluation(evaluator: Evaluator) -> Optional[list[int]]:
    """The evaluator's ``centipawns`` as the compiled search's table, [colour][piece type 0-6][square] flattened,
    when it is one (material, piece-square tables), else None."""
    centipawns = type(evaluator).centipawns
    if centipawns is PstEvaluator.centipawns:
        return [PST[(bool(color), piece_type)][square] if piece_type else 0
                for color in (chess.BLACK, chess.WHITE) for piece_type in range(7) for square in chess.SQUARES]
    if centipawns is MaterialEvaluator.centipawns:
        return [PIECE_VALUES[piece_type] if chess.PAWN <= piece_type <= chess.QUEEN else 0
                for _ in (chess.BLACK, chess.WHITE) for piece_type in range(7) for _ in chess.SQUARES]
    return None


def _tablebase_probe(tablebase: Tablebase) -> Callable[[tuple[Any, ...]], Optional[int]]:
    """The compiled search's tablebase callback: a position's state tuple -> ``probe_result``."""
    def probe(state: tuple[Any, ...]) -> Optional[int]:
        pawns, knights, bishops, rooks, queens, kings, white, black, turn, ep_square, halfmove_clock = state
        board = chess.Board(None)
        board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings = (
            pawns, knights, bishops, rooks, queens, kings)
        board.occupied_co = [black, white]
        board.occupied = white | black
        board.turn, board.ep_square, board.halfmove_clock = turn, ep_square, halfmove_clock
        return tablebase.probe_result(board)
    return probe


class AlphaBetaSearch(Search):
    """Iterative-deepening PVS; works with any :class:`Evaluator` through ``centipawns``."""

    name = "alphabeta"
    HELP = "principal variation search over any scalar evaluator (material, pst, resnet's value, dqn)"
    BENCH_NODES = 20000

    def __init__(self, evaluator: Evaluator) -> None:
        super().__init__(evaluator)
        self.tt = TranspositionTable(self.hash_mb)
        self.history = [[0] * 64 for _ in range(64)]
        self.killers = Killers(MAX_PLY + 1)
        self.nodes = 0
        self.seldepth = 0
        self.keys: list[int] = []
        #: Index of the root position's key in ``keys`` (the repetition policy tells tree from game history).
        self.root_index = 0
        self.excluded_root: set[chess.Move] = set()
        #: The root moves the search may play when `go searchmoves` or the tablebases narrow them, else None.
        self.root_allowed: Optional[set[chess.Move]] = None
        #: The root's tablebase result (+1 / 0 / -1) when the tables cover it.
        self.root_tablebase_result: Optional[int] = None
        self.pv: list[list[chess.Move]] = [[] for _ in range(MAX_PLY + 2)]
        #: The iteration's best finished root move so far in Python, (score, line), for a search stopped in it.
        self.root_line: Optional[tuple[int, list[chess.Move]]] = None
        #: The evaluation as the compiled search's table, when there is a compiled search for it.
        self.evaluation_table = compiled_evaluation(evaluator) if compiled.calphabeta is not None else None
        #: The compiled search and its table, made at its first use (None: not yet, or searching in Python).
        self.searcher: Any = None
        #: Whether the last search ran compiled (its table is the one `hashfull` reports).
        self.searched_compiled = False

    def set_hash(self, megabytes: float) -> None:
        """A new table of that size; a running Python search switches to it at its next probe, a compiled one
        at the next search."""
        super().set_hash(megabytes)
        self.tt = TranspositionTable(megabytes)
        self.searcher = None

    def new_game(self) -> None:
        self.tt.clear()
        if self.searcher is not None:
            self.searcher.clear()
        self.history = [[0] * 64 for _ in range(64)]

    def hashfull(self) -> int:
        return self.searcher.hashfull() if self.searched_compiled and self.searcher is not None else self.tt.hashfull()

    # ----------------------------------------------------------------- driver

    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        board = board.copy()
        self.control = control
        self.nodes = 0
        self.history = [[h // 8 for h in row] for row in self.history]
        self.keys = self._history_keys(board)
        self.root_index = len(self.keys)
        root = self.root_moves(board, control)
        root_moves = root.moves
        self.root_tablebase_result = root.tablebase_result
        if not root_moves:
            return SearchResult(None)
        legal_count = board.legal_moves.count()
        self.root_allowed = set(root_moves) if len(root_moves) < legal_count else None
        searcher = self._start_compiled(board, control)
        self.searched_compiled = searcher is not None
        if searcher is None:
            self.tt.new_search()
            self.killers.clear()
        try:
            return self._deepen(board, control, report, root_moves, searcher)
        finally:
            if searcher is not None:
                flat = searcher.history()
                self.history = [flat[origin * 64:origin * 64 + 64] for origin in range(64)]

    def _deepen(self, board: chess.Board, control: SearchControl, report: Reporter, root_moves: list[chess.Move],
                searcher: Any) -> SearchResult:
        """Iterative deepening with MultiPV lines, each root search in Python or compiled (``searcher``)."""
        best_lines: list[tuple[int, list[chess.Move]]] = [(0, [root_moves[0]])]
        multipv = min(self.multipv, len(root_moves))
        for depth in range(1, MAX_PLY):
            lines: list[tuple[int, list[chess.Move]]] = []
            self.excluded_root = set()
            self.root_line = None
            self.seldepth = 0
            try:
                for index in range(multipv):
                    if searcher is None:
                        score = self._negamax(board, depth, -INF, INF, 0, True)
                        pv = self.pv[0]
                    else:
                        score, pv = self._compiled_root_search(searcher, depth)
                    pv = pv or [m for m in root_moves if m not in self.excluded_root][:1]
                    lines.append((score, pv))
                    self.excluded_root.add(pv[0])
                    self._report(report, depth, score, pv, index + 1)
            except SearchStopped:
                if lines:  # a finished first line of a partial iteration is still better informed
                    best_lines = lines + best_lines[len(lines):]
                elif depth == 1:  # no iteration finished: the best root move searched so far, if any
                    partial = self._partial_line(searcher)
                    if partial is not None:
                        best_lines = [partial]
                        self._report(report, depth, *partial, 1)
                break
            best_lines = lines
            best_score = lines[0][0]
            # a mate, for either side, is proven once the iteration reaches two plies beyond it
            proven = abs(best_score) >= MATE_BOUND and depth > 2 * (MATE - abs(best_score)) + 2
            if control.should_stop(Progress(self.nodes, depth, len(root_moves), deepening=True,
                                            won=(mate_in_moves(best_score) or 0) > 0, proven=proven)):
                break
        pv = best_lines[0][1]
        return SearchResult(pv[0], pv[1] if len(pv) > 1 else None)

    def _start_compiled(self, board: chess.Board, control: SearchControl) -> Any:
        """The compiled search, started on ``board``, when the evaluation and the position allow it, else None."""
        calphabeta, cboard = compiled.calphabeta, compiled.cboard
        if self.evaluation_table is None or calphabeta is None or cboard is None:
            return None
        if self.searcher is None:
            self.searcher = calphabeta.Searcher(slot_count(self.hash_mb))
        tablebase = self.tablebase
        try:
            root = cboard.Board.from_board(board, history=False)
            self.searcher.start(root.state(), root.chess960, self.keys, self.evaluation_table,
                                [count for row in self.history for count in row],
                                None if control.max_nodes is None else min(control.max_nodes, MAX_NODES),
                                tablebase.max_pieces if tablebase is not None else 0)
        except ValueError:  # a position the compiled board does not take
            return None
        return self.searcher

    def _compiled_root_search(self, searcher: Any, depth: int) -> tuple[int, list[chess.Move]]:
        """One root search of the iteration in C: what ``_negamax`` at the root returns, and ``pv[0]``."""
        allowed = None if self.root_allowed is None else [compiled.move_code(m) for m in self.root_allowed]
        tablebase = self.tablebase
        searcher.seldepth = self.seldepth
        try:
            result = searcher.search(depth, [compiled.move_code(m) for m in self.excluded_root], allowed,
                                     self.control.stopped, None if tablebase is None else _tablebase_probe(tablebase))
        finally:
            self.nodes, self.seldepth = searcher.nodes, searcher.seldepth
        if result is None:
            raise SearchStopped
        score, codes = result
        return score, [compiled.code_move(code) for code in codes]

    def _partial_line(self, searcher: Any) -> Optional[tuple[int, list[chess.Move]]]:
        """The stopped root search's best finished root move so far, with its score and line, or None."""
        if searcher is None:
            return self.root_line
        partial = searcher.partial()
        return None if partial is None else (partial[0], [compiled.code_move(code) for code in partial[1]])

    def _history_keys(self, board: chess.Board) -> list[int]:
        """Zobrist keys of the game's positions since the last irreversible move."""
        keys = []
        replay = board.copy()
        for _ in range(min(board.halfmove_clock, len(board.move_stack))):
            replay.pop()
            keys.append(chess.polyglot.zobrist_hash(replay))
        keys.reverse()
        return keys

    def _report(self, report: Reporter, depth: int, score: int, pv: list[chess.Move], multipv: int) -> None:
        if self.root_tablebase_result is not None and abs(score) < MATE_BOUND:
            score = tablebase_score(self.root_tablebase_result, 1)  # the tables know better than a shallow search
        report(SearchInfo(depth=depth, seldepth=max(self.seldepth, depth), nodes=self.nodes,
                          time_s=self.control.elapsed(), pv=pv, score=score, wdl=score_wdl(score), multipv=multipv,
                          hashfull=self.hashfull(), tbhits=self.tbhits()))

    # ----------------------------------------------------------------- search

    def _check_stop(self) -> None:
        if self.nodes % CHECK_NODES_EVERY == 0 and self.control.stopped(self.nodes):
            raise SearchStopped
        if self.control.max_nodes is not None and self.nodes >= self.control.max_nodes:
            raise SearchStopped

    def _is_draw(self, board: chess.Board, key: int) -> bool:
        return (fifty_move_draw(board) or repetition_draw_keys(self.keys, key, board.halfmove_clock, self.root_index)
                or insufficient_material(board))

    def _negamax(self, board: chess.Board, depth: int, alpha: int, beta: int, ply: int, pv_node: bool,
                 allow_null: bool = True) -> int:
        self.pv[ply] = []
        if depth <= 0:
            return self._quiescence(board, alpha, beta, ply)
        self.nodes += 1
        self._check_stop()
        if ply > self.seldepth:
            self.seldepth = ply
        key = chess.polyglot.zobrist_hash(board)
        if ply > 0:
            if self._is_draw(board, key):
                return 0
            # mate distance pruning
            alpha, beta = max(alpha, mated_score(ply)), min(beta, mating_score(ply + 1))
            if alpha >= beta:
                return alpha
            tablebase = self.tablebase
            if tablebase is not None:
                result = tablebase.probe_result(board)
                if result is not None:
                    if result < 0 and board.is_checkmate():
                        return mated_score(ply)
                    return tablebase_score(result, ply)
        if ply >= MAX_PLY:
            return self.evaluator.centipawns(board)

        entry = self.tt.probe(key)
        tt_move = None
        if entry is not None:
            tt_move = entry[4]
            if ply > 0 and not pv_node and entry[1] >= depth:
                score = _score_from_tt(entry[2], ply)
                bound = entry[3]
                if bound == EXACT or (bound == LOWER and score >= beta) or (bound == UPPER and score <= alpha):
                    return score

        in_check = board.is_check()
        # null move: if passing still fails high, the position is good enough
        if (allow_null and not pv_node and not in_check and depth >= 3 and ply > 0
                and abs(beta) < MATE_BOUND and self._has_pieces(board)
                and self.evaluator.centipawns(board) >= beta):
            board.push(chess.Move.null())
            self.keys.append(key)
            try:
                score = -self._negamax(board, depth - 3, -beta, -beta + 1, ply + 1, False, False)
            finally:
                board.pop()
                self.keys.pop()
            if score >= beta:
                return beta

        moves = self._ordered_moves(board, tt_move, ply)
        if not moves:
            return mated_score(ply) if in_check else 0

        original_alpha = alpha
        best_score = -INF
        best_move = None
        searched = 0
        self.keys.append(key)
        try:
            for move in moves:
                if ply == 0 and (move in self.excluded_root
                                 or self.root_allowed is not None and move not in self.root_allowed):
                    continue
                capture = board.is_capture(move)
                board.push(move)
                gives_check = board.is_check()
                extension = 1 if gives_check and ply < 2 * depth + 4 else 0
                new_depth = depth - 1 + extension
                if searched == 0:
                    score = -self._negamax(board, new_depth, -beta, -alpha, ply + 1, pv_node)
                else:
                    reduction = 0
                    if (depth >= 3 and searched >= 3 and not capture and not gives_check and not in_check
                            and move.promotion is None):
                        reduction = 1 if searched < 8 else 2
                    score = -self._negamax(board, new_depth - reduction, -alpha - 1, -alpha, ply + 1, False)
                    if score > alpha and (reduction or pv_node):
                        score = -self._negamax(board, new_depth, -beta, -alpha, ply + 1, pv_node)
                board.pop()
                searched += 1
                if score > best_score:
                    best_score = score
                    best_move = move
                    if score > alpha:
                        alpha = score
                        if pv_node:
                            self.pv[ply] = [move] + self.pv[ply + 1]
                            if ply == 0:
                                self.root_line = (score, self.pv[0])
                        if score >= beta:
                            if not capture:
                                self._remember_quiet(move, depth, ply)
                            break
        finally:
            self.keys.pop()
        if searched == 0:  # every root move excluded (MultiPV larger than the move count)
            return -INF
        bound = LOWER if best_score >= beta else EXACT if best_score > original_alpha else UPPER
        self.tt.store(key, depth, _score_to_tt(best_score, ply), bound, best_move)
        return best_score

    @staticmethod
    def _has_pieces(board: chess.Board) -> bool:
        own = board.occupied_co[board.turn]
        return bool(own & (board.knights | board.bishops | board.rooks | board.queens))

    def _remember_quiet(self, move: chess.Move, depth: int, ply: int) -> None:
        self.killers.remember(ply, move)
        self.history[move.from_square][move.to_square] += depth * depth

    def _ordered_moves(self, board: chess.Board, tt_move: Optional[chess.Move], ply: int) -> list[chess.Move]:
        killers = self.killers.at(ply)
        history = self.history
        occupied_them = board.occupied_co[not board.turn]
        scored = []
        for move in legal_moves(board):
            if move == tt_move:
                score = 10_000_000
            elif (1 << move.to_square) & occupied_them:
                score = 1_000_000 + mvv_lva(board, move)
            elif move.promotion:
                score = 900_000 + move.promotion
            elif move == killers[0]:
                score = 800_000
            elif move == killers[1]:
                score = 700_000
            else:
                score = history[move.from_square][move.to_square]
            scored.append((score, move))
        scored.sort(key=lambda item: item[0], reverse=True)
        return [move for _, move in scored]

    def _quiescence(self, board: chess.Board, alpha: int, beta: int, ply: int) -> int:
        self.nodes += 1
        self._check_stop()
        if ply > self.seldepth:
            self.seldepth = ply
        in_check = board.is_check()
        if ply >= MAX_PLY:
            return self.evaluator.centipawns(board)
        if in_check:
            moves = list(board.legal_moves)
            if not moves:
                return mated_score(ply)
            best = -INF
        else:
            stand_pat = self.evaluator.centipawns(board)
            if stand_pat >= beta:
                return stand_pat
            alpha = max(alpha, stand_pat)
            best = stand_pat
            moves = sorted(board.generate_legal_captures(), key=lambda m: mvv_lva(board, m), reverse=True)
        for move in moves:
            board.push(move)
            score = -self._quiescence(board, -beta, -alpha, ply + 1)
            board.pop()
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if score >= beta:
                        break
        return best


def _score_to_tt(score: int, ply: int) -> int:
    """Mate and tablebase scores are stored relative to the node, not the root."""
    if score >= TB_BOUND:
        return score + ply
    if score <= -TB_BOUND:
        return score - ply
    return score


def _score_from_tt(score: int, ply: int) -> int:
    if score >= TB_BOUND:
        return score - ply
    if score <= -TB_BOUND:
        return score + ply
    return score
