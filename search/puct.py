"""PUCT Monte-Carlo tree search (AlphaZero / Leela style).

Leaves are gathered in minibatches under virtual loss and evaluated in the
stages of :class:`evaluators.base.Request`: selection walks the nodes only;
the board is set to a new leaf from the position stored in the leaf's parent
(a python-chess board state, kept in every evaluated node) with one move made,
the path's stored states forming the board's history for the repetition rule;
the search generates a leaf's legal moves once (for the rules of
:mod:`hackmate_core.rules`, the mate-in-one test and the evaluator), and hands
the leaf to the evaluator's ``prepare`` before returning the board to the
root; a minibatch's
input is made (``collate``) on the search thread too. A network's
``infer`` runs in an inference thread: with ``Overlap`` (and ``Threads`` 2 or
more) the search gathers and prepares the next minibatch while the network
evaluates the previous one; otherwise it waits for each, interruptibly, so
that `stop` and the hard deadline are answered within milliseconds either way.
Results are backed up in the order the batches were sent, so node counts for
a node budget are the same from run to run, overlapped or not. With a clock,
no minibatch is sent that would likely come back after the hard deadline
(a moving average of the network's seconds per position says so).

On the compiled path (:mod:`hackmate_core.compiled`, with ``hackmate_core._cpuct`` built) a node keeps a
compiled position instead, and one C call per leaf makes its move, generates its moves, applies the rules
and finds a mate in one; the evaluator's ``prepare_leaf`` takes the cache key, tactical gains, input
planes and policy slots from it, computed in C the way the Python computes them, so that both paths
build the same tree. What a leaf needs from the game before the root (the keys of the repetition rule, and
for an encoding with history the root's history from the evaluator's ``leaf_history``) is handed to C
once per search. Evaluators that cannot take such a leaf (a plugin) keep the python-chess path, as do
positions the compiled board refuses. Selection, expansion and backup run in C
too (over these Python nodes, with the same arithmetic) wherever the module is loaded; with compiled
leaves a minibatch comes back in one C call (``settle``: virtual loss off, expansions and backups).

Unvisited children get a first-play-urgency value below the parent's;
positions decided by rule, by the tablebases or by a mate in one are scored
exactly, and the subtree of the move played is kept for the next search.

The tree stores an expanded node's moves and priors, sorted by prior, in
compact arrays (a move as a 16-bit code), and creates a child node only when
selection first picks that move: the first visits of a node's children always
follow the prior order (an unvisited child's score is the first-play urgency
plus its prior term), so selection only scores the children visited so far
and the best unvisited one. A node thus costs a few hundred bytes and two
objects for Python's garbage collector to scan, not one per legal move.

Memory: the tree may hold ``node_budget`` nodes, derived from its share of
``Hash``. When it is full the tree stops growing and the search goes on
inside it: a leaf that was already evaluated backs up its own value again
(no new nodes, no network call), which keeps refining the root's statistics;
the search says so once with an `info string`.
"""

from __future__ import annotations

import math
import sys
import time
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, Optional, Sequence

import chess

from evaluators.base import Evaluation, Evaluator, Request
from hackmate_core import compiled
from hackmate_core.compiled import code_move, move_code
from hackmate_core.boards import BoardState, state_stack, truncate_history
from hackmate_core.options import Option
from hackmate_core.rules import LegalMoves, game_result, legal_moves, mate_in_one
from hackmate_core.score import mated_score, mating_score, q_to_cp, q_to_wdl, score_wdl, tablebase_score
from hackmate_core.tree import TreeNode
from search.base import Reporter, Search, SearchControl, SearchInfo, SearchResult
from search.stoppers import Progress

REPORT_EVERY_S = 1.0
#: Memory of one tree node with its moves, priors and board state once expanded (a node is created per playout),
#: measured with tracemalloc.
BYTES_PER_NODE = 1130
#: Smallest tree, whatever the Hash.
MIN_TREE_NODES = 1000
#: ``Node.plies`` of a result known from the tablebases (distance unknown): ranks after every real mate.
UNKNOWN_DISTANCE = 1000
#: Longest wait for the network between two looks at `stop` and the clock.
POLL_S = 0.002
#: With the overlap, how long the search thread may keep the GIL while the inference thread wants it
#: (Python's default, 5 ms, would idle the network that long after each run, a minibatch takes 10-20 ms).
SWITCH_INTERVAL_S = 0.0005
#: hackmate_core._cpuct (PUCT's per-leaf work in C); None on the pure-Python path.
_cpuct = compiled.cpuct


class Node(TreeNode):
    """A tree node, in the layout :class:`hackmate_core.tree.TreeNode` declares for the compiled PUCT, with the
    search's own slots. ``value_sum`` is from the point of view of the side that moved into it.

    Expanded, a node holds its legal ``moves`` (as :func:`move_code`) and
    their ``priors`` sorted by prior, and ``children``: the nodes of its first
    ``len(children)`` moves, those selection has picked so far.
    """

    __slots__ = ("move", "plies", "state")

    def __init__(self, move: Optional[chess.Move], prior: float) -> None:
        self.move = move
        self.prior = prior
        self.moves: Optional[Sequence[int]] = None
        self.priors: Sequence[float] = ()
        self.children: list[Node] = []
        self.visits = 0
        self.value_sum = 0.0
        self.draw_sum = 0.0
        self.virtual = 0
        #: Sum of the priors of the children visited at least once (first-play urgency grows with it).
        self.visited_policy = 0.0
        #: (value, draw) for the side to move here when the position's result is known exactly.
        self.terminal: Optional[tuple[float, float]] = None
        #: Plies to the end of the game when ``terminal`` is known (0: the game is over here;
        #: UNKNOWN_DISTANCE and more: a tablebase result).
        self.plies = 0
        #: The position here (python-chess's board state, or on the compiled path a hackmate_core._cpuct.Position),
        #: kept once the node is sent to the evaluator: a leaf below it is one move from it, without making the
        #: moves of the whole path.
        self.state: Any = None

    def proven_lost(self) -> bool:
        """True when the side that moved into this node is proven to lose here (MCTS-solver)."""
        return self.terminal is not None and self.terminal[0] == 1.0

    def q(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0


def _tablebase_value(result: int) -> tuple[float, float]:
    """(value, draw probability) for the side to move of a tablebase result (+1 / 0 / -1)."""
    return float(result), 1.0 - abs(result)


def _compiled_position(board: chess.Board) -> Any:
    """``board``'s position as a hackmate_core._cpuct.Position (ValueError: the compiled board does not take it)."""
    if board.promoted & board.kings:
        raise ValueError("a promoted king")
    ep_square = board.ep_square
    return _cpuct.position(board.pawns, board.knights, board.bishops, board.rooks,  # type: ignore[union-attr]
                           board.queens, board.kings, board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK],
                           board.turn, board.clean_castling_rights(), -1 if ep_square is None else ep_square,
                           board.halfmove_clock, board.fullmove_number, board.chess960)


class Batch:
    """Leaves sent to the evaluator together: their paths (holding virtual loss) and requests."""

    __slots__ = ("paths", "requests", "future", "sent")

    def __init__(self) -> None:
        self.paths: list[list[Node]] = []
        self.requests: list[Request] = []
        self.future: Optional[Future] = None
        #: When the batch went to the network (time.monotonic()).
        self.sent = 0.0


class PuctSearch(Search):
    """PUCT over any evaluator that gives a value and move priors."""

    name = "puct"
    HELP = "Monte-Carlo tree search (PUCT) over a value and move priors, best with resnet"
    BENCH_NODES = 800
    OPTIONS = (
        Option("CPuct", "spin", 200, 10, 1000, scale=100, attribute="cpuct",
               help="exploration constant x100: higher spreads visits over more moves"),
        Option("FpuReduction", "spin", 30, 0, 200, scale=100, attribute="fpu_reduction",
               help="first-play urgency x100: how much worse than its parent an unvisited move is assumed"),
        Option("MinibatchSize", "spin", 0, 0, 256, attribute="minibatch_size",
               help="leaves evaluated per evaluator call; 0: 16 with a network policy, 1 otherwise"),
        Option("Overlap", "check", True, attribute="overlap",
               help="with Threads 2 or more, prepare the next minibatch while the network evaluates one"),
    )

    def __init__(self, evaluator: Evaluator) -> None:
        super().__init__(evaluator)
        self.virtual_loss = 1
        self.root: Optional[Node] = None
        self.root_fen: Optional[str] = None
        #: True when the root's children were narrowed (searchmoves, tablebases): the next search re-expands it.
        self.root_filtered = False
        self.nodes = 0
        self.reused = 0
        self.max_depth_seen = 0
        self.depth_sum = 0
        #: Nodes in the current tree (estimated for a reused subtree), and how many it may hold.
        self.tree_nodes = 0
        self.node_budget = self._budget(self.hash_mb)
        self._said_full = False
        self._executor: Optional[ThreadPoolExecutor] = None
        #: Seconds per position from sending a batch to its result (a moving average): no batch is sent that
        #: would come back after the hard deadline.
        self.network_seconds = 0.0
        #: Whether the tree's positions are compiled ones (the leaves are made in C), and for those what the leaves
        #: take from the game before the root (a hackmate_core._cpuct.Game).
        self.compiled_tree = False
        self._game: Any = None

    # ---------------------------------------------------------------- memory

    @staticmethod
    def _budget(megabytes: float) -> int:
        return max(MIN_TREE_NODES, int(megabytes * 1024 * 1024) // BYTES_PER_NODE)

    def set_hash(self, megabytes: float) -> None:
        """A new node budget; a running search grows the tree up to it from its next expansion."""
        super().set_hash(megabytes)
        self.node_budget = self._budget(megabytes)
        self._said_full = False

    def hashfull(self) -> int:
        return min(1000, self.tree_nodes * 1000 // self.node_budget)

    def tree_full(self) -> bool:
        return self.tree_nodes >= self.node_budget

    @property
    def batch_size(self) -> int:
        return self.minibatch_size or (16 if self.evaluator.has_policy else 1)

    def new_game(self) -> None:
        """Drop the tree (a running search keeps its own root; the next search starts a new tree)."""
        self.root = None
        self.root_fen = None

    # ---------------------------------------------------------------- threads

    def set_threads(self, threads: int) -> None:
        """The network gets every thread. With the overlap the search thread's work (about a third of the
        network's time per position) shares the cores with it, which keeps both cores busier than a core
        reserved for either (docs/bench.md)."""
        super().set_threads(threads)
        self.evaluator.set_threads(threads)

    @property
    def overlapping(self) -> bool:
        """True when the search prepares a minibatch while the network runs another (Overlap, Threads >= 2)."""
        return self.overlap and self.threads >= 2 and self.evaluator.infers_in_native_code

    def _inference_thread(self) -> Optional[ThreadPoolExecutor]:
        """The thread that runs the network (None when the evaluator has no native part worth one)."""
        if not self.evaluator.infers_in_native_code:
            return None
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")
        return self._executor

    # ----------------------------------------------------------------- driver

    def search(self, board: chess.Board, control: SearchControl, report: Reporter) -> SearchResult:
        board = board.copy()
        self.control = control
        root_moves = self.root_moves(board, control)
        allowed = root_moves.moves
        if not allowed:
            return SearchResult(None)
        compiled_root = self._compiled_root(board)
        root = self._reuse_tree(board, compiled_root is not None)
        if compiled_root is not None:
            root.state, self._game = compiled_root  # where every walk down the tree starts
        else:
            root.state = BoardState(board)
        moves = legal_moves(board)  # the root is evaluated with every legal move: evaluations are cached by position
        better = self.evaluator.root_evaluation(board, moves)
        if root.moves is None:
            root_evaluation = better if better is not None else self.evaluator.evaluate(board, moves)
            self._expand(root, root_evaluation)
        else:
            root_evaluation = better
            if better is not None:
                self._rerank_root(root, better)
        self.root_filtered = len(allowed) < len(root.moves or ())
        if self.root_filtered:
            self._filter_root(root, set(allowed))
        self.nodes = 0
        self.max_depth_seen = 0
        self.depth_sum = 0
        self._said_full = False
        inference = self._inference_thread()
        overlap = inference is not None and self.overlapping
        if overlap and sys.getswitchinterval() > SWITCH_INTERVAL_S:
            sys.setswitchinterval(SWITCH_INTERVAL_S)
        on_the_way: list[Batch] = []  # sent to the network, not yet backed up; oldest first
        last_report = time.monotonic()
        cannot_change, unclear = partial(self._decided, root), partial(self._unclear, root)
        try:
            while True:
                queued = sum(len(sent.requests) for sent in on_the_way)
                batch = self._gather(board, root, queued)
                if batch.requests:
                    if not self._in_time(len(batch.requests) + queued):
                        self._abandon(batch)  # it would come back after the hard deadline: not worth sending
                        break
                    batch.sent = time.monotonic()  # the network's time per position counts the collating too
                    inputs = self.evaluator.collate(batch.requests)  # here: the inference thread only runs
                    if inference is None:
                        self.evaluator.infer(batch.requests, inputs)
                    else:
                        batch.future = inference.submit(self.evaluator.infer, batch.requests, inputs)
                    on_the_way.append(batch)
                # with the overlap the batch just sent stays on its way while the next one is gathered
                if not self._complete_all(on_the_way, keep=1 if overlap and batch.requests else 0):
                    break
                now = time.monotonic()
                won = self._proven_mate(root) is not None
                if control.should_stop(Progress(self.nodes, self.depth_sum / self.nodes if self.nodes else 0.0,
                                                len(root.moves or ()), deepening=False, won=won,
                                                proven=won or root.terminal is not None,
                                                cannot_change=cannot_change, unclear=unclear)):
                    break
                if now - last_report >= REPORT_EVERY_S:
                    self._report(report, root)
                    last_report = now
            if not control.stopped(self.nodes):
                self._complete_all(on_the_way, keep=0)  # a soft stop: what is on its way still counts
        finally:
            for batch in on_the_way:
                self._abandon(batch)
        if not root.visits:  # stopped before any leaf came back: the root's own evaluation is the one node
            result = root_moves.tablebase_result
            if result is not None:  # the tables know better than the network
                root_evaluation = Evaluation(*_tablebase_value(result))
            elif root_evaluation is None:
                root_evaluation = self.evaluator.evaluate(board, moves)
            self._settle([root], root_evaluation)
        self._create_children(root)
        self._report(report, root)
        best = self._best_child(root)
        ponder = self._best_child(best) if best.children else None
        return SearchResult(best.move, ponder.move if ponder is not None else None)

    def _compiled_root(self, board: chess.Board) -> Optional[tuple[Any, Any]]:
        """The root's compiled position and the Game of its leaves (the game's positions before it within its
        fifty-move clock, and the evaluator's :meth:`~evaluators.base.Evaluator.leaf_history`), when the leaves can
        be made in C (the compiled path is in use, the evaluator takes compiled leaves and the compiled board takes
        the position and its history); else None."""
        if _cpuct is None or not self.evaluator.takes_leaves() or type(board) is not chess.Board:
            return None
        # a leaf with a clock of 100 is drawn anyway; the repetition planes of the tree's positions (each with a
        # clock under 100) look no further back either
        back = min(board.halfmove_clock, len(board.move_stack), 100)
        earlier = board.copy(stack=back)
        for _ in range(back):
            earlier.pop()
        try:
            position = _compiled_position(earlier)
            before = []
            for move in board.move_stack[len(board.move_stack) - back:]:
                before.append(position)
                position = position.make(move_code(move))
            if position.state() != _compiled_position(board).state():
                return None
        except ValueError:  # a position the compiled board does not take, a null move
            return None
        return position, _cpuct.game(before, back == len(board.move_stack), self.evaluator.leaf_history(board))

    def _reuse_tree(self, board: chess.Board, compiled_tree: bool) -> Node:
        """Find the new root among the old tree's grandchildren (our move + their reply); a tree of the other
        path's positions (compiled or python-chess's) is not reused."""
        self.reused = 0
        old_root = self.root
        same_path, self.compiled_tree = compiled_tree == self.compiled_tree, compiled_tree
        if old_root is not None and self.root_fen is not None and same_path:
            for back in range(0, 3):
                if len(board.move_stack) < back:
                    break
                ancestor = board.copy(stack=back)
                for _ in range(back):
                    ancestor.pop()
                if ancestor.fen() != self.root_fen:
                    continue
                if back == 0 and self.root_filtered:
                    break  # the old root lacks the moves its filter removed
                node: Optional[Node] = old_root
                for move in board.move_stack[len(board.move_stack) - back:]:
                    node = next((c for c in node.children if c.move == move), None)
                    if node is None:
                        break
                if node is not None and node.moves is not None:
                    node.move = None
                    # a subtree holds about its share of the visits' nodes
                    self.tree_nodes = self.tree_nodes * node.visits // max(1, old_root.visits)
                    self.root, self.root_fen, self.reused = node, board.fen(), node.visits
                    return node
                break
        self.root, self.root_fen, self.tree_nodes = Node(None, 1.0), board.fen(), 1
        return self.root

    def _rerank_root(self, root: Node, evaluation: Evaluation) -> None:
        """Give a root kept from the last search the priors of the evaluator's root evaluation: every move gets its
        child (so the children stay the first moves in prior order), then moves, priors and children are sorted by
        the new priors, with their statistics kept."""
        self._create_children(root)
        prior_of = {move_code(move): prior for move, prior in (evaluation.priors or {}).items()}
        codes = sorted((move_code(child.move) for child in root.children), key=prior_of.__getitem__,  # type: ignore
                       reverse=True)
        child_of = {move_code(child.move): child for child in root.children}  # type: ignore[arg-type]
        root.moves = array("H", codes)
        root.priors = array("f", [prior_of[code] for code in codes])
        root.children = [child_of[code] for code in codes]
        for child, prior in zip(root.children, root.priors):
            child.prior = prior
        root.visited_policy = sum(child.prior for child in root.children if child.visits)

    def _filter_root(self, root: Node, allowed: set[chess.Move]) -> None:
        """Keep only ``allowed`` moves at the root (`go searchmoves`, the tablebase filter)."""
        codes = {move_code(move) for move in allowed}
        keep = [i for i, code in enumerate(root.moves or ()) if code in codes]
        root.moves = array("H", [root.moves[i] for i in keep])  # type: ignore[index]
        root.priors = array("f", [root.priors[i] for i in keep])
        root.children = [child for child in root.children if child.move in allowed]
        root.visited_policy = sum(child.prior for child in root.children if child.visits)

    # -------------------------------------------------------------- playouts

    def _gather(self, board: chess.Board, root: Node, in_flight: int) -> Batch:
        """Select up to a minibatch of new leaves (each with virtual loss along its path) and prepare them.

        Leaves whose value is known at once (rules, tablebases, mate in one, a
        cache hit, a full tree) are backed up on the spot. Stops early on
        `stop`, at the hard deadline, and when the node budget is spoken for.
        """
        batch = Batch()
        control = self.control
        max_nodes = control.max_nodes
        for _ in range(self.batch_size):
            if max_nodes is not None and self.nodes + in_flight + len(batch.requests) >= max_nodes:
                break
            if control.stopped(self.nodes):
                break
            self._playout(board, root, batch)
        return batch

    def _playout(self, board: chess.Board, root: Node, batch: Batch) -> None:
        """One walk from the root: backs up a known value or adds a leaf to ``batch``."""
        full = self.tree_full()
        if full and not self._said_full:  # said here, whatever filled it: growth or a `Hash` cut below its size
            self._said_full = True
            self.control.note(f"tree full at {self.tree_nodes} nodes (Hash share {self.hash_mb:g} MB): "
                              f"searching on without growing it")
        if _cpuct is not None:  # the same walk in C
            path = _cpuct.select(root, full, self.cpuct, self.fpu_reduction, self._create_child)
        else:
            path = self._select(root, full)
        node = path[-1]
        depth = len(path) - 1
        if node.terminal is not None:
            self._count_depth(depth)
            self._backup(path, *node.terminal)
            return
        if node.visits and (node.moves is None or full):
            # evaluated before but not expanded further (the tree is full): its value again
            self._count_depth(depth)
            self._backup(path, -node.q(), node.draw_sum / node.visits)
            return
        if node.virtual:
            return  # a collision with a leaf already on its way to the network
        self._count_depth(depth)
        request = self._prepare_leaf(path) if self.compiled_tree else self._prepare_on_board(board, path)
        if request is None:
            return  # its result was known exactly and is backed up
        if request.evaluation is not None:  # known at once (a cache hit)
            self._settle(path, request.evaluation)
            return
        if _cpuct is not None:
            _cpuct.add_virtual(path, self.virtual_loss)
        else:
            for n in path:
                n.virtual += self.virtual_loss
        batch.paths.append(path)
        batch.requests.append(request)

    def _prepare_on_board(self, board: chess.Board, path: list[Node]) -> Optional[Request]:
        """The evaluator's request for the leaf ``path[-1]``, with python-chess's board set on it; None when its
        result is known exactly (then backed up)."""
        depth, root, node = len(path) - 1, path[0], path[-1]
        base = len(board.move_stack)
        try:
            self._set_board(board, path)
            moves = LegalMoves(legal_moves(board))  # for the rules, mate in one and the evaluator
            terminal = self._terminal_value(board, moves, depth)
            if terminal is not None:
                self._settle_terminal(path, terminal)
                return None
            request = self.evaluator.prepare(board, moves)
            node.state = BoardState(board)
        finally:
            if depth:
                truncate_history(board, base)
                root.state.restore(board)
        return request

    def _prepare_leaf(self, path: list[Node]) -> Optional[Request]:
        """:meth:`_prepare_on_board` with the leaf made by the compiled board: one C call makes the move on the
        parent's position, generates the moves and applies the rules; the evaluator takes what it needs from it."""
        node = path[-1]
        leaf = _cpuct.leaf(path, move_code(node.move) if len(path) > 1 else -1, self._game)  # type: ignore
        terminal = self._leaf_terminal(leaf)
        if terminal is not None:
            self._settle_terminal(path, terminal)
            return None
        request = self.evaluator.prepare_leaf(leaf)
        node.state = leaf.state
        return request

    def _settle_terminal(self, path: list[Node], terminal: tuple[float, float, int]) -> None:
        """Mark the leaf's exact result and back it up (MCTS-solver)."""
        value, draw, plies = terminal
        path[-1].terminal, path[-1].plies = (value, draw), plies
        self._backup(path, value, draw)
        self._solve_upwards(path)

    @staticmethod
    def _set_board(board: chess.Board, path: list[Node]) -> None:
        """Put ``board`` (standing at the root, ``path[0]``) on the leaf ``path[-1]``: the stored states of the
        path become its history, as pushing every move would have made them, and only the leaf's move is made."""
        if len(path) == 1:
            return
        history, moves = state_stack(board), board.move_stack
        for index in range(1, len(path) - 1):
            history.append(path[index - 1].state)
            moves.append(path[index].move)
        path[-2].state.restore(board)  # type: ignore[union-attr]
        board.push(path[-1].move)  # type: ignore[arg-type]

    def _create_children(self, node: Node) -> None:
        """A child for each of ``node``'s moves: after a search the root lists every move it may play
        (self-play reads the visit distribution over them)."""
        for index in range(len(node.children), len(node.moves or ())):
            node.children.append(Node(code_move(node.moves[index]), node.priors[index]))  # type: ignore[index]
            self.tree_nodes += 1

    def _count_depth(self, depth: int) -> None:
        if depth > self.max_depth_seen:
            self.max_depth_seen = depth
        self.depth_sum += depth

    def _complete_all(self, batches: list[Batch], keep: int) -> bool:
        """Back up the oldest of ``batches`` until ``keep`` remain (removing them); False when the search must
        stop first."""
        while len(batches) > keep:
            if not self._complete(batches[0]):
                return False
            batches.pop(0)
        return True

    def _complete(self, batch: Batch) -> bool:
        """Wait for ``batch``'s network run, then back its leaves up; False (nothing done) when the search
        must stop first (`stop`, the hard deadline)."""
        future = batch.future
        if future is not None:
            control = self.control
            while True:
                try:
                    future.result(timeout=POLL_S)
                    break
                except TimeoutError:
                    if control.stopped(self.nodes):
                        return False
        seconds = (time.monotonic() - batch.sent) / len(batch.requests)
        self.network_seconds += (seconds - self.network_seconds) / 4  # a moving average of recent batches
        paths, batch.paths = batch.paths, []
        if self.compiled_tree:  # the leaves' moves are codes: the same updates in one C call
            _cpuct.settle(paths, self.evaluator.finish(batch.requests), self.virtual_loss,  # type: ignore[union-attr]
                          not self.tree_full())
            self.nodes += len(paths)
            return True
        for path in paths:
            for n in path:
                n.virtual -= self.virtual_loss
        for path, evaluation in zip(paths, self.evaluator.finish(batch.requests)):
            self._settle(path, evaluation)
        return True

    def _in_time(self, leaves: int) -> bool:
        """True when the network can likely evaluate ``leaves`` more positions before the hard deadline."""
        deadline = self.control.hard_deadline
        return deadline is None or time.monotonic() + leaves * self.network_seconds < deadline

    def _abandon(self, batch: Batch) -> None:
        """Give up a batch on its way (the search stops): its paths lose their virtual loss and their depth, its
        result is dropped."""
        for path in batch.paths:
            self.depth_sum -= len(path) - 1
            for n in path:
                n.virtual -= self.virtual_loss
        batch.paths = []

    def _settle(self, path: list[Node], evaluation: Evaluation) -> None:
        """Expand the leaf with ``evaluation`` (room permitting) and back its value up."""
        leaf = path[-1]
        if leaf.moves is None and not self.tree_full():
            self._expand(leaf, evaluation)
        self._backup(path, evaluation.value, evaluation.draw if evaluation.draw is not None else 0.0)

    def _select(self, root: Node, full: bool) -> list[Node]:
        """The path from the root to the leaf that PUCT selection reaches."""
        path = [root]
        node = root
        while node.moves is not None and node.terminal is None:
            child = self._pick_child(node, full)
            if child is None:
                break  # a full tree and nothing created here yet: this node is the leaf
            path.append(child)
            node = child
        return path

    def _pick_child(self, node: Node, full: bool) -> Optional[Node]:
        """The child with the best PUCT score, created when it is the first visit of its move (not in a
        full tree); None when a full tree has no child here."""
        children = node.children
        parent_visits = node.visits + node.virtual
        sqrt_n = math.sqrt(parent_visits) if parent_visits > 1 else 1.0
        cpuct = self.cpuct
        fpu = ((-node.value_sum / node.visits if node.visits else 0.0)
               - self.fpu_reduction * math.sqrt(node.visited_policy))
        best, best_score = None, -math.inf
        for child in children:
            terminal = child.terminal
            if terminal is not None and terminal[0] == 1.0:
                continue  # proven lost: never worth a visit
            n = child.visits + child.virtual
            if n:  # virtual losses count as losses
                score = (child.value_sum - child.virtual) / n + cpuct * child.prior * sqrt_n / (1 + n)
            else:
                score = fpu + cpuct * child.prior * sqrt_n
            if score > best_score:
                best, best_score = child, score
        created = len(children)
        moves = node.moves
        if not full and moves is not None and created < len(moves):
            prior = node.priors[created]
            if fpu + cpuct * prior * sqrt_n > best_score or best is None:
                best = self._create_child(node, created)
        return best

    def _create_child(self, node: Node, index: int) -> Node:
        """The child of ``node.moves[index]``, made at its first visit (the moves before it have theirs)."""
        child = Node(code_move(node.moves[index]), node.priors[index])  # type: ignore[index]
        node.children.append(child)
        self.tree_nodes += 1
        return child

    def _terminal_value(self, board: chess.Board, moves: Sequence[chess.Move],
                        tree_plies: int) -> Optional[tuple[float, float, int]]:
        """(value, draw, plies to the end) for the side to move if the position's result is known exactly."""
        result = game_result(board, moves, tree_plies)
        if result is not None:
            return (-1.0, 0.0, 0) if result < 0 else (0.0, 1.0, 0)
        if self.tablebase is not None:
            result = self.tablebase.probe_result(board)
            if result is not None:
                return (*_tablebase_value(result), UNKNOWN_DISTANCE)
        if mate_in_one(board, moves) is not None:
            return (1.0, 0.0, 1)
        return None

    def _leaf_terminal(self, leaf: Any) -> Optional[tuple[float, float, int]]:
        """:meth:`_terminal_value` of a compiled leaf (the tablebases probe a python-chess board of it)."""
        result = leaf.result
        if result is not None:
            return (-1.0, 0.0, 0) if result < 0 else (0.0, 1.0, 0)
        tablebase = self.tablebase
        if tablebase is not None and leaf.pieces <= tablebase.max_pieces and not leaf.castling:
            result = tablebase.probe_result(leaf.board())
            if result is not None:
                return (*_tablebase_value(result), UNKNOWN_DISTANCE)
        if leaf.mate_in_one:
            return (1.0, 0.0, 1)
        return None

    @staticmethod
    def _expand(node: Node, evaluation: Evaluation) -> None:
        moves, policy = evaluation.moves, evaluation.policy
        if moves is None or policy is None:
            priors = evaluation.priors or {}
            moves, policy = list(priors), list(priors.values())
        if moves and type(moves[0]) is not int:  # python-chess's moves; a compiled leaf's are codes already
            moves = [move_code(move) for move in moves]
        if _cpuct is not None and isinstance(moves, list) and isinstance(policy, list):
            _cpuct.expand(node, moves, policy)  # the same sort in C
            return
        order = sorted(range(len(moves)), key=policy.__getitem__, reverse=True)
        node.moves = array("H", [moves[i] for i in order])
        node.priors = array("f", [policy[i] for i in order])

    def _backup(self, path: list[Node], value: float, draw: float) -> None:
        """``value`` is from the leaf's side to move; flip it at each ply going up."""
        self.nodes += 1
        if _cpuct is not None:
            _cpuct.backup(path, value, draw)  # the same updates in C
            return
        for index in range(len(path) - 1, -1, -1):
            node = path[index]
            if not node.visits and index:
                path[index - 1].visited_policy += node.prior
            node.visits += 1
            value = -value
            node.value_sum += value
            node.draw_sum += draw

    @staticmethod
    def _solve_upwards(path: list[Node]) -> None:
        """MCTS-solver: mark ancestors whose result is now proven (a mate or forced draw found)."""
        for node in reversed(path[:-1]):
            children = node.children
            winning = [c.plies for c in children if c.terminal is not None and c.terminal[0] == -1.0]
            if winning:
                node.terminal, node.plies = (1.0, 0.0), min(winning) + 1
            elif (children and len(children) == len(node.moves or ())
                  and all(c.terminal is not None for c in children)):
                best = max(children, key=lambda c: -c.terminal[0])  # type: ignore[index]
                value, draw = best.terminal  # type: ignore[misc]
                node.terminal, node.plies = (-value, draw), max(c.plies for c in children) + 1
            else:
                return

    # -------------------------------------------------------------- decisions

    @staticmethod
    def _ranked(node: Node) -> list[Node]:
        return sorted(node.children, key=lambda c: (not c.proven_lost(), c.visits, c.q(), c.prior), reverse=True)

    def _best_child(self, node: Node) -> Node:
        mate = self._proven_mate(node)
        return mate if mate is not None else self._ranked(node)[0]

    def _decided(self, root: Node, remaining_s: float) -> bool:
        """True when the runner-up cannot catch up with the best in ``remaining_s`` more seconds.

        The speed that predicts the playouts still to come is this search's own, so it is trusted only
        after two minibatches: with the overlap the first check comes before any network result is
        back, and a reused tree's lead measured against a handful of playouts made the engine move
        at once on 41% of its moves at 10+0.1 (f8231fc waited for a whole minibatch).
        """
        if self.nodes < 2 * self.batch_size:
            return False
        ranked = self._ranked(root)
        runner_up = ranked[1].visits if len(ranked) > 1 else 0
        elapsed = max(self.control.elapsed(), 1e-3)
        expected_more = self.nodes / elapsed * remaining_s
        return ranked[0].visits - runner_up > expected_more

    def _unclear(self, root: Node) -> bool:
        """True when the best move by visits is not the best by value (worth more time at the soft deadline)."""
        ranked = self._ranked(root)
        if len(ranked) < 2 or ranked[1].visits == 0:
            return False
        return ranked[1].q() > ranked[0].q() + 0.02

    @staticmethod
    def _proven_mate(node: Node) -> Optional[Node]:
        """The quickest child in which the opponent is proven lost (by mate or by the tablebases), if any."""
        won = [c for c in node.children if c.terminal is not None and c.terminal[0] == -1.0]
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

    @staticmethod
    def _proven_score(child: Node) -> Optional[int]:
        """The root side's score for a child whose result is proven, else None."""
        if child.terminal is None:
            return None
        value = -child.terminal[0]
        if value == 0.0:
            return 0
        plies = child.plies + 1  # from the root
        if child.plies >= UNKNOWN_DISTANCE:
            return tablebase_score(1 if value > 0 else -1, plies - UNKNOWN_DISTANCE)
        return mating_score(plies) if value > 0 else mated_score(plies)

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
            proven = self._proven_score(child)
            if proven is not None:
                score, wdl = proven, score_wdl(proven)
            else:
                q = child.q() if child.visits else -root.q()
                draw = child.draw_sum / child.visits if child.visits else None
                score, wdl = q_to_cp(q), q_to_wdl(q, draw)
            depth = max(1, round(self.depth_sum / max(1, self.nodes)))
            report(SearchInfo(depth=depth, seldepth=max(depth, self.max_depth_seen), nodes=self.nodes,
                              time_s=elapsed, pv=self._pv(child), score=score, wdl=wdl, multipv=index + 1,
                              hashfull=self.hashfull(), tbhits=self.tbhits()))
