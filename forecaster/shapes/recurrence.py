"""Recurrent layers for tiny models on CPU, with a hand-written backward pass through time.

For a model of a few hundred parameters the arithmetic is negligible and the cost is the number of
tensor operations per time step. `torch.nn.RNN` and `nn.GRU` on CPU record four to ten autograd nodes
per step; the layers here take two to five operations per step each way, which is what makes a whole fit
cheaper in CPU time (bench/single_trial.py's plain_modules row measures it against PyTorch's modules:
docs/benchmarks.md, "One fit"). `nn.LSTM` needs no such help: on CPU it runs oneDNN's fused kernel, faster than
anything written op by op. The layers read the weights of the `nn.RNN`/`nn.GRU` module, so parameters,
optimizers and checkpoints are the standard ones; off CPU (cuDNN, XLA) the module itself runs.

All tensors are time-major, (time, batch, features), and every sequence starts from a zero state:
Darts' RNNModel trains each window from scratch.

`fast_path_applies` decides, per call, whether the layers here or the module itself run. `hidden_states` looks it
up at call time, so a benchmark or a test that wants PyTorch's modules everywhere replaces it with a function that
returns False.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn


def hidden_states(rnn: nn.RNNBase, inputs: Tensor) -> Tensor:
    """The top layer's hidden states for `inputs` (T, B, input_size): `rnn(inputs)[0]`, by the fastest path.

    Under CPU mixed precision the recurrence runs in float32 (the layers after it still use the lower
    precision): oneDNN has no bfloat16 LSTM on CPUs without AVX-512 BF16, and a tiny recurrence gains
    nothing from it anyway.
    """
    if inputs.is_cpu and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            return hidden_states(rnn, inputs.float())
    if not fast_path_applies(rnn, inputs):
        return cast(Tensor, rnn(inputs)[0])
    layer = _LAYERS[rnn.mode]
    hidden = inputs
    for index in range(rnn.num_layers):
        if index and rnn.dropout and rnn.training:
            hidden = F.dropout(hidden, rnn.dropout, training=True)
        hidden = layer.apply(hidden, *_layer_weights(rnn, index))  # type: ignore[no-untyped-call]
    return hidden


GRU_MODULE_FROM = 8192
"""Batch x hidden_size from which a GRU runs nn.GRU itself: oneDNN's fused GRU overtakes the hand-written layer where
the arithmetic, not the number of operations, is the cost (a panel's batches of 256-512 windows). The tanh layer
stayed ahead at every size measured, so it has no such threshold. docs/benchmarks.md, "One fit on a panel", has the
timings."""


def fast_path_applies(rnn: nn.RNNBase, inputs: Tensor) -> bool:
    """Whether the hand-written layers compute exactly what `rnn` would, and faster: they assume a tanh-RNN or GRU
    module on CPU, time-major (batch_first=False), one direction, with both biases, no proj_size, and inputs of
    shape (T, B, input_size); a GRU below GRU_MODULE_FROM. Anything else runs the module itself."""
    return (
        rnn.mode in _LAYERS
        and not (rnn.mode == "GRU" and inputs.dim() == 3 and inputs.shape[1] * rnn.hidden_size >= GRU_MODULE_FROM)
        and inputs.is_cpu
        and inputs.dim() == 3
        and not rnn.batch_first
        and not rnn.bidirectional
        and rnn.bias
        and not getattr(rnn, "proj_size", 0)
    )


def _layer_weights(rnn: nn.RNNBase, index: int) -> list[Tensor]:
    return [getattr(rnn, f"{name}_l{index}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


State = list[Tensor | tuple[Tensor, Tensor]]


def zero_state(rnn: nn.RNNBase, batch: int, like: Tensor) -> State:
    """The initial state of every layer for `step`: h, or (h, c) for an LSTM."""
    zeros: Callable[[], Tensor] = lambda: like.new_zeros(batch, rnn.hidden_size)  # noqa: E731
    return [(zeros(), zeros()) if rnn.mode == "LSTM" else zeros() for _ in range(rnn.num_layers)]


def step(rnn: nn.RNNBase, inputs: Tensor, state: State) -> Tensor:
    """Advance every layer by one time step (inputs: B x input_size), updating `state` in place.

    One ATen cell call per layer: the cheapest way to run a forecast that feeds its own output back.
    """
    hidden = inputs
    for index in range(rnn.num_layers):
        weights = _layer_weights(rnn, index)
        if rnn.mode == "LSTM":
            state[index] = torch.lstm_cell(hidden, cast("tuple[Tensor, Tensor]", state[index]), *weights)
            hidden = state[index][0]
        elif rnn.mode == "GRU":
            hidden = state[index] = torch.gru_cell(hidden, cast(Tensor, state[index]), *weights)
        else:
            hidden = state[index] = torch.rnn_tanh_cell(hidden, cast(Tensor, state[index]), *weights)
    return hidden


def _input_projection(inputs: Tensor, weight_ih: Tensor, bias: Tensor) -> Tensor:
    """x_t W_ih^T + bias for all time steps at once: (T, B, gates)."""
    steps, batch, _ = inputs.shape
    return torch.addmm(bias, inputs.reshape(steps * batch, -1), weight_ih.t()).view(steps, batch, -1)


def _parameter_grads(
    grad_input_gates: Tensor,
    grad_hidden_gates: Tensor,
    inputs: Tensor,
    hidden: Tensor,
    weight_ih: Tensor,
    needs_input_grad: bool,
) -> tuple[Tensor | None, Tensor, Tensor, Tensor, Tensor]:
    """Gradients of (inputs, W_ih, W_hh, b_ih, b_hh) from those of every step's gate pre-activations.

    The input-side and hidden-side gate gradients are the same tensor except in a GRU, whose candidate
    gate scales the hidden side by r.
    """
    steps, batch, gates = grad_input_gates.shape
    flat_input_gates = grad_input_gates.view(steps * batch, gates)
    grad_weight_ih = flat_input_gates.t().mm(inputs.reshape(steps * batch, -1))
    grad_weight_hh = grad_hidden_gates[1:].reshape(-1, gates).t().mm(hidden[:-1].reshape(-1, hidden.shape[-1]))
    grad_inputs = flat_input_gates.mm(weight_ih).view_as(inputs) if needs_input_grad else None
    grad_bias_ih = flat_input_gates.sum(0)
    grad_bias_hh = grad_bias_ih if grad_hidden_gates is grad_input_gates else grad_hidden_gates.sum((0, 1))
    return grad_inputs, grad_weight_ih, grad_weight_hh, grad_bias_ih, grad_bias_hh


class _Context(Protocol):
    """What the layers' forward and backward passes use of autograd's context."""

    saved_tensors: tuple[Tensor, ...]
    needs_input_grad: tuple[bool, ...]

    def save_for_backward(self, *tensors: Tensor) -> None: ...


class _TanhLayer(torch.autograd.Function):
    """h_t = tanh(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh).

    The loops run over per-step views made once by `unbind`: indexing inside the loop would create
    a view per tensor per step, which costs as much as the arithmetic.
    """

    @staticmethod
    def forward(
        ctx: _Context, inputs: Tensor, weight_ih: Tensor, weight_hh: Tensor, bias_ih: Tensor, bias_hh: Tensor
    ) -> Tensor:
        hidden = _input_projection(inputs, weight_ih, bias_ih + bias_hh)  # filled in place with h_t
        weight_hh_t = weight_hh.t()
        steps = hidden.unbind(0)
        previous = steps[0].tanh_()
        for current in steps[1:]:
            previous = current.addmm_(previous, weight_hh_t).tanh_()
        ctx.save_for_backward(inputs, weight_ih, weight_hh, hidden)
        return hidden

    @staticmethod
    def backward(ctx: _Context, grad_hidden: Tensor) -> tuple[Tensor | None, Tensor, Tensor, Tensor, Tensor]:
        inputs, weight_ih, weight_hh, hidden = ctx.saved_tensors
        tanh_grad = torch.addcmul(torch.ones((), dtype=hidden.dtype, device=hidden.device), hidden, hidden, value=-1)
        grad_pre = torch.empty_like(hidden)  # gradient of each step's pre-activation
        pre, upstream, factor = grad_pre.unbind(0), grad_hidden.unbind(0), tanh_grad.unbind(0)
        later = torch.mul(upstream[-1], factor[-1], out=pre[-1])
        for t in range(len(pre) - 2, -1, -1):
            later = torch.addmm(upstream[t], later, weight_hh, out=pre[t]).mul_(factor[t])
        return _parameter_grads(grad_pre, grad_pre, inputs, hidden, weight_ih, ctx.needs_input_grad[0])


class _GRULayer(torch.autograd.Function):
    """PyTorch's GRU: r, z = sigmoid(.); n = tanh(W_in x + b_in + r (W_hn h + b_hn)); h_t = n + z (h_{t-1} - n)."""

    @staticmethod
    def forward(
        ctx: _Context, inputs: Tensor, weight_ih: Tensor, weight_hh: Tensor, bias_ih: Tensor, bias_hh: Tensor
    ) -> Tensor:
        size = weight_hh.shape[1]
        gates = _input_projection(inputs, weight_ih, bias_ih)  # r, z, n, activated in place
        hidden_gates = torch.empty_like(gates)  # W_hh h_{t-1} + b_hh, kept for the backward pass
        hidden = gates.new_empty((*gates.shape[:2], size))
        weight_hh_t = weight_hh.t()
        previous = hidden.new_zeros(hidden.shape[1:])
        for rz, r, z, n, h_gates, h_rz, h_n, current in zip(
            gates[..., : 2 * size].unbind(0),
            gates[..., :size].unbind(0),
            gates[..., size : 2 * size].unbind(0),
            gates[..., 2 * size :].unbind(0),
            hidden_gates.unbind(0),
            hidden_gates[..., : 2 * size].unbind(0),
            hidden_gates[..., 2 * size :].unbind(0),
            hidden.unbind(0),
        ):
            torch.addmm(bias_hh, previous, weight_hh_t, out=h_gates)
            rz.add_(h_rz).sigmoid_()
            n.addcmul_(r, h_n).tanh_()
            previous = torch.lerp(n, previous, z, out=current)
        ctx.save_for_backward(inputs, weight_ih, weight_hh, gates, hidden_gates, hidden)
        return hidden

    @staticmethod
    def backward(ctx: _Context, grad_hidden: Tensor) -> tuple[Tensor | None, Tensor, Tensor, Tensor, Tensor]:
        inputs, weight_ih, weight_hh, gates, hidden_gates, hidden = ctx.saved_tensors
        steps, batch, size = hidden.shape
        r, z, n = gates.split(size, dim=2)  # type: ignore[no-untyped-call]
        previous = torch.cat([torch.zeros_like(hidden[:1]), hidden[:-1]])
        # d(pre-activation)/dh_t for each gate, for all steps at once, outside the loop.
        n_factor = (1 - z) * (1 - n * n)
        r_factor = n_factor * hidden_gates[..., 2 * size :] * r * (1 - r)
        z_factor = (previous - n) * z * (1 - z)
        input_factors = torch.cat([r_factor, z_factor, n_factor], dim=2)
        hidden_factors = torch.cat([r_factor, z_factor, n_factor * r], dim=2).view(steps, batch, 3, size)
        grad_h = torch.empty_like(hidden)  # total gradient reaching each h_t
        grad_hidden_gates = torch.empty_like(gates)
        grad_h[-1] = grad_hidden[-1]
        total, upstream, keep = grad_h.unbind(0), grad_hidden.unbind(0), z.unbind(0)
        factors, grad_gates = hidden_factors.unbind(0), grad_hidden_gates.view(steps, batch, 3, size).unbind(0)
        for t in range(steps - 1, -1, -1):
            torch.mul(factors[t], total[t].unsqueeze(1), out=grad_gates[t])
            if t:
                torch.addcmul(upstream[t - 1], total[t], keep[t], out=total[t - 1]).addmm_(
                    grad_hidden_gates[t], weight_hh
                )
        grad_input_gates = (input_factors.view(steps, batch, 3, size) * grad_h.unsqueeze(2)).view(
            steps, batch, 3 * size
        )
        return _parameter_grads(grad_input_gates, grad_hidden_gates, inputs, hidden, weight_ih, ctx.needs_input_grad[0])


_LAYERS = {"RNN_TANH": _TanhLayer, "GRU": _GRULayer}
