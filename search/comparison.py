"""DeepChess's comparison alpha-beta: bounds are positions, not numbers.

alpha_pos is the best leaf White is already guaranteed, beta_pos the best
Black is; a leaf replaces alpha_pos when the comparator prefers it (for White),
and a node is cut when alpha_pos is preferred over beta_pos. Checkmates,
stalemates and rule draws are compared by rule, never by the network: a mate
beats every position (sooner mates beat later ones), a tablebase win beats
every position but loses to a mate, and a draw is as good as the starting
position, the comparator's picture of an even game.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

import chess
import numpy as np

from evaluators.base import Comparator
from evaluators.options import Option
from evaluators.rules import game_result, mated_score, mating_score, mvv_lva, score_wdl, see, tablebase_score
from evaluators.score import q_to_cp, q_to_wdl
from search.base import Reporter, Search, SearchControl, SearchInfo, SearchResult, SearchStopped

MAX_PLY = 64
MAX_QUIESCENCE_PLIES = 8
#: Nodes between looks at the clock and `stop`.
CHECK_NODES_EVERY = 16


@dataclass
class Leaf:
    """A search result: a mate, a tablebase result, a draw, or a network position."""

    features: Optional[np.ndarray]
    mate_ply: int = 0  # plies from the root to the mate, signed by the winner (> 0: White mates)
    draw: bool = False
    pv: tuple = ()
    bound: int = 0  # +1 / -1: the initial beta / alpha, better / worse for White than any real leaf
    tablebase_ply: int = 0  # plies from the root to a tablebase win, signed by the winner


class ComparisonSearch(Search):
    name = "comparison"
    uses_hash = False  # no table of its own: Hash goes to the comparator's feature cache
    OPTIONS = (Option("Quiescence", "check", True, attribute="quiescence",
                      help="resolve captures before the comparator judges a leaf (it was trained on quiet "
                           "positions)"),)

    def __init__(self, comparator: Comparator) -> None:
        super().__init__()
        self.comparator = comparator
        self.control = SearchControl()
        self.even: Optional[np.ndarray] = None
        self.seldepth = 0
        self.comparisons = 0
        self.best_moves: dict[int, chess.Move] = {}
        #: The root moves the search may play (searchmoves, tablebases), None for all.
        self.root_allowed: Optional[set[chess.Move]] = None

    def hashfull(self) -> int:
        return self.comparator.hashfull()

    # ----------------------------------------------------------- ordering

    def white_prefers(self, a: Leaf, b: Leaf) -> bool:
        """True if leaf ``a`` is better for White than leaf ``b``."""
        ka, kb = self._mate_rank(a), self._mate_rank(b)
        if ka is not None or kb is not None:
            return (ka if ka is not None else 0.0) > (kb if kb is not None else 0.0) if ka != kb else False
        fa = self.even if a.draw else a.features
        fb = self.even if b.draw else b.features
        if fa is fb:
            return False
        self.comparisons += 1
        return self.comparator.prefers_first(fa, fb) > 0.5

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

    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        board = board.copy()
        self.control = control
        self.nodes = 0
        self.comparisons = 0
        self.comparator.reset(chess.Board())
        self.even = self.comparator.features(chess.Board())
        self.comparator.reset(board)
        root_features = self.comparator.features(board)
        moves = self.root_moves(board, control).moves
        if not moves:
            return SearchResult(None)
        self.root_allowed = set(moves) if len(moves) < board.legal_moves.count() else None
        best: Optional[Leaf] = None
        max_depth = min(control.max_depth or MAX_PLY, MAX_PLY)
        for depth in range(1, max_depth + 1):
            self.seldepth = 0
            try:
                leaf = self._alphabeta(board, depth, 0, Leaf(None, bound=-1), Leaf(None, bound=1))
            except SearchStopped:
                break
            best = leaf
            self._report(report, depth, leaf, board, root_features)
            if control.stopped(self.nodes) or not control.may_start_iteration() or len(moves) == 1 and \
                    control.soft_deadline is not None:
                break
            if leaf.mate_ply and abs(leaf.mate_ply) < depth and not control.infinite:
                break
        if best is None or not best.pv:
            return SearchResult(moves[0])
        return SearchResult(best.pv[0], best.pv[1] if len(best.pv) > 1 else None)

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

    def _terminal(self, board: chess.Board, ply: int, moves: list[chess.Move]) -> Optional[Leaf]:
        """A mate, a draw by rule or a tablebase result; at the root only the end of the game counts."""
        if moves and ply == 0:
            return None
        result = game_result(board, moves, ply)
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

    def _ordered(self, board: chess.Board, ply: int) -> list[chess.Move]:
        hint = self.best_moves.get(ply)
        legal = board.legal_moves
        if ply == 0 and self.root_allowed is not None:
            legal = [move for move in legal if move in self.root_allowed]  # type: ignore[assignment]

        def key(move: chess.Move) -> int:
            if move == hint:
                return 1000
            if board.is_capture(move):
                return 100 + mvv_lva(board, move)
            return 0
        return sorted(legal, key=key, reverse=True)

    def _alphabeta(self, board: chess.Board, depth: int, ply: int, alpha: Leaf, beta: Leaf) -> Leaf:
        self.nodes += 1
        if self.nodes % CHECK_NODES_EVERY == 0 and self.control.stopped(self.nodes):
            raise SearchStopped
        self.seldepth = max(self.seldepth, ply)
        moves = self._ordered(board, ply)
        terminal = self._terminal(board, ply, moves)
        if terminal is not None:
            return terminal
        if depth == 0 or ply >= MAX_PLY:
            if self.quiescence and ply < MAX_PLY:
                return self._quiescence(board, ply, 0, alpha, beta)
            return Leaf(self.comparator.features(board))
        return self._expand(board, moves, ply, alpha, beta, None, True,
                            lambda a, b: self._alphabeta(board, depth - 1, ply + 1, a, b))

    def _quiescence(self, board: chess.Board, ply: int, qply: int, alpha: Leaf, beta: Leaf) -> Leaf:
        """Captures only, so that the comparator (trained on quiet positions) judges quiet ones.

        The side to move may stand pat on the current position; in check it must
        answer with any legal move, and a position with no answer is mate.
        """
        if qply > 0:
            self.nodes += 1
            if self.nodes % CHECK_NODES_EVERY == 0 and self.control.stopped(self.nodes):
                raise SearchStopped
            self.seldepth = max(self.seldepth, ply)
        if board.is_check():
            moves = self._ordered(board, ply)
            if not moves:
                return Leaf(None, mate_ply=ply if board.turn == chess.BLACK else -ply)
            if qply >= MAX_QUIESCENCE_PLIES or ply >= MAX_PLY:
                return Leaf(self.comparator.features(board))
            return self._expand(board, moves, ply, alpha, beta, None, False,
                                lambda a, b: self._quiescence(board, ply + 1, qply + 1, a, b))
        stand_pat = Leaf(self.comparator.features(board))
        if qply >= MAX_QUIESCENCE_PLIES or ply >= MAX_PLY:
            return stand_pat
        return self._expand(board, self._promising_captures(board), ply, alpha, beta, stand_pat, False,
                            lambda a, b: self._quiescence(board, ply + 1, qply + 1, a, b))

    @staticmethod
    def _promising_captures(board: chess.Board) -> list[chess.Move]:
        """Captures that do not lose material by static exchange, most valuable victim first."""
        promising = [move for move in board.generate_legal_captures() if see(board, move) >= 0]
        return sorted(promising, key=lambda m: mvv_lva(board, m), reverse=True)

    def _expand(self, board: chess.Board, moves: list[chess.Move], ply: int, alpha: Leaf, beta: Leaf,
                best: Optional[Leaf], remember: bool, child: Callable[[Leaf, Leaf], Leaf]) -> Leaf:
        """Search ``moves`` with ``child(alpha_pos, beta_pos)``, keeping the side to move's best leaf.

        ``best`` is a stand-pat leaf (quiescence) or None; a node is cut as soon
        as alpha_pos is no longer worse for White than beta_pos.
        """
        white = board.turn == chess.WHITE
        if best is not None:
            alpha, beta = self._narrow(white, best, alpha, beta)
            if not self.white_prefers(beta, alpha):
                return best
        for move in moves:
            self.comparator.push(board, move)
            try:
                leaf = child(alpha, beta)
            finally:
                self.comparator.pop(board)
            leaf = replace(leaf, pv=(move,) + leaf.pv)
            if best is None or (self.white_prefers(leaf, best) if white else self.white_prefers(best, leaf)):
                best = leaf
                if remember:
                    self.best_moves[ply] = move
            alpha, beta = self._narrow(white, best, alpha, beta)
            if not self.white_prefers(beta, alpha):
                break  # the side to move already has something the opponent will not allow
        assert best is not None
        return best

    def _narrow(self, white: bool, best: Leaf, alpha: Leaf, beta: Leaf) -> tuple[Leaf, Leaf]:
        if white and self.white_prefers(best, alpha):
            return best, beta
        if not white and self.white_prefers(beta, best):
            return alpha, best
        return alpha, beta
