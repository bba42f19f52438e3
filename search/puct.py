"""PUCT Monte-Carlo tree search (AlphaZero / Leela style).

Leaves are gathered in minibatches under virtual loss and evaluated with one
:meth:`Evaluator.evaluate_batch` call, so a neural evaluator sees batches
instead of single positions. Unvisited children get a first-play-urgency value
below the parent's, terminal and tablebase positions are scored exactly, and
the subtree of the move played is kept for the next search.
"""

from __future__ import annotations

import math
import time
from typing import Any, Optional

import chess

from evaluators.base import Evaluation, Evaluator, EvaluatorOption
from evaluators.score import q_to_cp, q_to_wdl
from search.base import Reporter, Search, SearchControl, SearchInfo, SearchResult

REPORT_EVERY_S = 1.0


MATES_NEXT_MOVE = (1.0, 0.0)  # terminal value of a position whose side to move mates at once


def mate_in_one(board: chess.Board) -> Optional[chess.Move]:
    """A move that mates at once, if the side to move has one.

    A few hundred playouts often never visit the opponent's one mating reply, so
    a leaf that allows mate would look fine; this check makes it a proven loss.
    Only moves landing on a square that attacks the enemy king (and promotions)
    are tried, which keeps it cheap; mates by discovered check are not seen.
    """
    us = board.turn
    king = board.king(not us)
    if king is None:
        return None
    occupied = board.occupied
    diagonal = chess.BB_DIAG_ATTACKS[king][chess.BB_DIAG_MASKS[king] & occupied]
    straight = (chess.BB_RANK_ATTACKS[king][chess.BB_RANK_MASKS[king] & occupied]
                | chess.BB_FILE_ATTACKS[king][chess.BB_FILE_MASKS[king] & occupied])
    checking = {chess.PAWN: chess.BB_PAWN_ATTACKS[not us][king], chess.KNIGHT: chess.BB_KNIGHT_ATTACKS[king],
                chess.BISHOP: diagonal, chess.ROOK: straight, chess.QUEEN: diagonal | straight, chess.KING: 0}
    for move in board.generate_legal_moves():
        piece = move.promotion or board.piece_type_at(move.from_square)
        if not (checking[piece] & chess.BB_SQUARES[move.to_square]):  # type: ignore[index]
            continue
        board.push(move)
        mated = board.is_checkmate()
        board.pop()
        if mated:
            return move
    return None


class Node:
    """A tree node. ``value_sum`` is from the point of view of the side that moved into it."""

    __slots__ = ("move", "prior", "children", "visits", "value_sum", "draw_sum", "virtual", "terminal", "plies")

    def __init__(self, move: Optional[chess.Move], prior: float) -> None:
        self.move = move
        self.prior = prior
        self.children: Optional[list[Node]] = None
        self.visits = 0
        self.value_sum = 0.0
        self.draw_sum = 0.0
        self.virtual = 0
        #: (value, draw) for the side to move here when the position's result is known exactly.
        self.terminal: Optional[tuple[float, float]] = None
        #: Plies to the end of the game when ``terminal`` is known (0: the game is over here).
        self.plies = 0

    def proven_lost(self) -> bool:
        """True when the side that moved into this node is proven to lose here (MCTS-solver)."""
        return self.terminal is not None and self.terminal[0] == 1.0

    def q(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0


class PuctSearch(Search):
    """PUCT over any evaluator that gives a value and move priors."""

    name = "puct"

    def __init__(self, evaluator: Evaluator) -> None:
        super().__init__()
        self.evaluator = evaluator
        self.cpuct = 2.0
        self.fpu_reduction = 0.3
        self.batch_size = 16 if evaluator.has_policy else 1
        self.virtual_loss = 1
        self.root: Optional[Node] = None
        self.root_fen: Optional[str] = None
        self.control = SearchControl()
        self.nodes = 0
        self.reused = 0
        self.max_depth_seen = 0
        self.depth_sum = 0

    # ---------------------------------------------------------------- options

    def options(self) -> list[EvaluatorOption]:
        return [EvaluatorOption("CPuct", "spin", int(self.cpuct * 100), 10, 1000),
                EvaluatorOption("FpuReduction", "spin", int(self.fpu_reduction * 100), 0, 200),
                EvaluatorOption("MinibatchSize", "spin", self.batch_size, 1, 256)]

    def set_option(self, name: str, value: Any) -> None:
        if name == "CPuct":
            self.cpuct = int(value) / 100.0
        elif name == "FpuReduction":
            self.fpu_reduction = int(value) / 100.0
        elif name == "MinibatchSize":
            self.batch_size = int(value)

    def new_game(self) -> None:
        self.root = None
        self.root_fen = None

    # ----------------------------------------------------------------- driver

    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        board = board.copy()
        self.control = control
        root = self._reuse_tree(board)
        if root.children is None:
            self._expand_root(board, root)
        if not root.children:
            return SearchResult(None)
        self.nodes = 0
        self.max_depth_seen = 0
        self.depth_sum = 0
        last_report = time.monotonic()
        extended = False
        while True:
            self._playout_batch(board, root)
            now = time.monotonic()
            if control.stopped(self.nodes):
                break
            if control.max_depth is not None and self.nodes and self.depth_sum / self.nodes >= control.max_depth:
                break
            mate = self._proven_mate(root)
            if mate is not None and (control.mate_in is not None or not control.infinite):
                break
            if root.terminal is not None and not control.infinite:
                break
            if control.soft_deadline is not None:
                if now >= control.soft_deadline:
                    if not extended and self._unclear(root) and control.hard_deadline is not None:
                        # best by visits is not best by value: think up to half of what remains
                        control.soft_deadline = now + (control.hard_deadline - now) / 2
                        extended = True
                    else:
                        break
                elif self._decided(root, control.soft_deadline - now):
                    break
            if now - last_report >= REPORT_EVERY_S:
                self._report(report, root)
                last_report = now
        self._report(report, root)
        best = self._best_child(root)
        ponder = self._best_child(best) if best.children else None
        return SearchResult(best.move, ponder.move if ponder is not None else None)

    def _reuse_tree(self, board: chess.Board) -> Node:
        """Find the new root among the old tree's grandchildren (our move + their reply)."""
        self.reused = 0
        if self.root is not None and self.root_fen is not None:
            for back in range(0, 3):
                if len(board.move_stack) < back:
                    break
                ancestor = board.copy()
                for _ in range(back):
                    ancestor.pop()
                if ancestor.fen() != self.root_fen:
                    continue
                node: Optional[Node] = self.root
                for move in board.move_stack[len(board.move_stack) - back:]:
                    node = next((c for c in node.children or [] if c.move == move), None)
                    if node is None:
                        break
                if node is not None and node.children is not None:
                    node.move = None
                    self.root, self.root_fen, self.reused = node, board.fen(), node.visits
                    return node
                break
        self.root, self.root_fen = Node(None, 1.0), board.fen()
        return self.root

    def _expand_root(self, board: chess.Board, root: Node) -> None:
        evaluation = self.evaluator.evaluate(board) if any(board.legal_moves) else Evaluation(0.0)
        self._expand(root, evaluation)

    # -------------------------------------------------------------- playouts

    def _playout_batch(self, board: chess.Board, root: Node) -> None:
        pending: list[tuple[list[Node], chess.Board]] = []
        for _ in range(self.batch_size):
            path = self._select(board, root)
            if path is None:
                break
            leaf = path[-1]
            depth = len(path) - 1
            self.max_depth_seen = max(self.max_depth_seen, depth)
            self.depth_sum += depth
            if leaf.terminal is not None:
                self._backup(path, *leaf.terminal)
                continue
            leaf_board = board.copy(stack=8)
            for node in path[1:]:
                leaf_board.push(node.move)  # type: ignore[arg-type]
            terminal = self._terminal_value(leaf_board)
            if terminal is not None:
                leaf.terminal = terminal
                leaf.plies = 1 if terminal == MATES_NEXT_MOVE else 0
                self._backup(path, *terminal)
                self._solve_upwards(path)
                continue
            pending.append((path, leaf_board))
            if self.control.stopped(self.nodes + len(pending)):
                break
        if not pending:
            return
        evaluations = self.evaluator.evaluate_batch([b for _, b in pending])
        for (path, _), evaluation in zip(pending, evaluations):
            leaf = path[-1]
            if leaf.children is None:
                self._expand(leaf, evaluation)
            self._backup(path, evaluation.value, evaluation.draw if evaluation.draw is not None else 0.0)

    def _select(self, board: chess.Board, root: Node) -> Optional[list[Node]]:
        """Walk down by PUCT, adding virtual loss; None if the walk only hits pending leaves."""
        path = [root]
        node = root
        while node.children and node.terminal is None:
            node = self._pick_child(node)
            path.append(node)
        if node.virtual > 0 and node.terminal is None:
            return None  # collision with a leaf already in this batch
        for n in path:
            n.virtual += self.virtual_loss
        return path

    def _pick_child(self, node: Node) -> Node:
        children = node.children
        assert children
        parent_visits = node.visits + node.virtual
        sqrt_n = math.sqrt(max(1, parent_visits))
        visited_policy = 0.0
        for child in children:
            if child.visits:
                visited_policy += child.prior
        fpu = (-node.q() if node.visits else 0.0) - self.fpu_reduction * math.sqrt(visited_policy)
        best, best_score = children[0], -math.inf
        cpuct = self.cpuct
        for child in children:
            if child.proven_lost():
                continue  # never worth a visit
            n = child.visits + child.virtual
            if n:
                q = (child.value_sum - child.virtual) / n  # virtual losses count as losses
            else:
                q = fpu
            score = q + cpuct * child.prior * sqrt_n / (1 + n)
            if score > best_score:
                best, best_score = child, score
        return best

    def _terminal_value(self, board: chess.Board) -> Optional[tuple[float, float]]:
        """(value, draw) for the side to move if the game is decided by rule or tablebase."""
        if not any(board.generate_legal_moves()):
            return (-1.0, 0.0) if board.is_check() else (0.0, 1.0)
        if board.is_insufficient_material() or board.halfmove_clock >= 100:
            return (0.0, 1.0)
        if board.halfmove_clock >= 4 and board.is_repetition(2):
            return (0.0, 1.0)
        if self.tablebase is not None:
            wdl = self.tablebase.probe_wdl(board)
            if wdl is not None:
                return (0.0, 1.0) if wdl in (-1, 0, 1) else ((1.0, 0.0) if wdl > 0 else (-1.0, 0.0))
        if mate_in_one(board) is not None:
            return MATES_NEXT_MOVE
        return None

    def _expand(self, node: Node, evaluation: Evaluation) -> None:
        priors = evaluation.priors or {}
        node.children = [Node(move, p) for move, p in sorted(priors.items(), key=lambda kv: -kv[1])]

    def _backup(self, path: list[Node], value: float, draw: float) -> None:
        """``value`` is from the leaf's side to move; flip it at each ply going up."""
        self.nodes += 1
        for node in reversed(path):
            node.virtual -= self.virtual_loss
            node.visits += 1
            value = -value
            node.value_sum += value
            node.draw_sum += draw

    @staticmethod
    def _solve_upwards(path: list[Node]) -> None:
        """MCTS-solver: mark ancestors whose result is now proven (a mate or forced draw found)."""
        for node in reversed(path[:-1]):
            children = node.children or []
            winning = [c.plies for c in children if c.terminal is not None and c.terminal[0] == -1.0]
            if winning:
                node.terminal, node.plies = (1.0, 0.0), min(winning) + 1
            elif children and all(c.terminal is not None for c in children):
                best = max(children, key=lambda c: -c.terminal[0])  # type: ignore[index]
                value, draw = best.terminal  # type: ignore[misc]
                node.terminal, node.plies = (-value, draw), max(c.plies for c in children) + 1
            else:
                return

    # -------------------------------------------------------------- decisions

    @staticmethod
    def _ranked(node: Node) -> list[Node]:
        return sorted(node.children or [], key=lambda c: (not c.proven_lost(), c.visits, c.q(), c.prior),
                      reverse=True)

    def _best_child(self, node: Node) -> Node:
        mate = self._proven_mate(node)
        return mate if mate is not None else self._ranked(node)[0]

    def _decided(self, root: Node, remaining_s: float) -> bool:
        """True when the runner-up cannot catch up with the best in the time left."""
        ranked = self._ranked(root)
        if len(ranked) < 2:
            return True
        elapsed = max(self.control.elapsed(), 1e-3)
        expected_more = self.nodes / elapsed * remaining_s
        return ranked[0].visits - ranked[1].visits > expected_more

    def _unclear(self, root: Node) -> bool:
        ranked = self._ranked(root)
        if len(ranked) < 2 or ranked[1].visits == 0:
            return False
        return ranked[1].q() > ranked[0].q() + 0.02

    @staticmethod
    def _proven_mate(node: Node) -> Optional[Node]:
        """The quickest child in which the opponent is proven lost, if any."""
        won = [c for c in node.children or [] if c.terminal is not None and c.terminal[0] == -1.0]
        return min(won, key=lambda c: c.plies) if won else None

    # --------------------------------------------------------------- reports

    def _pv(self, node: Node) -> list[chess.Move]:
        pv = [node.move] if node.move else []
        while node.children and node.visits > 0:
            node = self._best_child(node)
            if node.visits == 0:
                break
            pv.append(node.move)  # type: ignore[arg-type]
        return pv

    def _report(self, report: Reporter, root: Node) -> None:
        elapsed = self.control.elapsed()
        ranked = self._ranked(root)
        mate_child = self._proven_mate(root)
        if mate_child is not None:
            ranked.remove(mate_child)
            ranked.insert(0, mate_child)
        for index, child in enumerate(ranked[: max(1, self.multipv)]):
            if index and child.visits == 0:
                break
            q = child.q() if child.visits else -root.q()
            draw = child.draw_sum / child.visits if child.visits else None
            mate = None
            if child.terminal is not None and child.terminal[0] != 0.0:
                mate = (child.plies + 2) // 2 if child.terminal[0] < 0 else -((child.plies + 1) // 2)
            report(SearchInfo(depth=max(1, round(self.depth_sum / max(1, self.nodes))),
                              seldepth=self.max_depth_seen, nodes=self.nodes, time_s=elapsed,
                              pv=self._pv(child), score_cp=None if mate else q_to_cp(q), mate=mate,
                              wdl=q_to_wdl(q if not mate else (1.0 if mate > 0 else -1.0), 0.0 if mate else draw),
                              multipv=index + 1, hashfull=None))
