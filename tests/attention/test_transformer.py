import pytest
import torch

from icml25.attention.transformer import SelfAttention, TransformerBlock, TransformerStack, init_gpt_weights


def test_causal_attention_ignores_future_tokens():
    torch.manual_seed(0)
    block = TransformerBlock(16, 4, causal=True).eval()
    x = torch.randn(2, 6, 16)
    y = x.clone()
    y[:, 4:] = torch.randn(2, 2, 16)
    assert torch.allclose(block(x)[:, :4], block(y)[:, :4], atol=1e-6)
    assert not torch.allclose(block(x)[:, 4:], block(y)[:, 4:])


def test_matches_manual_attention():
    torch.manual_seed(1)
    att = SelfAttention(8, 2)
    x = torch.randn(3, 5, 8)
    q, k, v = att.qkv(x).chunk(3, dim=-1)
    heads = [slice(0, 4), slice(4, 8)]
    outs = []
    for h in heads:
        w = torch.softmax(q[..., h] @ k[..., h].transpose(1, 2) / 2.0, dim=-1)
        outs.append(w @ v[..., h])
    expected = att.out(torch.cat(outs, dim=-1))
    assert torch.allclose(att(x), expected, atol=1e-5)


def test_boolean_mask_blocks_pairs():
    torch.manual_seed(2)
    att = SelfAttention(8, 2)
    x = torch.randn(1, 4, 8)
    mask = torch.eye(4, dtype=torch.bool)
    v = att.qkv(x)[..., 16:]
    assert torch.allclose(att(x, mask), att.out(v), atol=1e-5)


def test_stack_shapes_and_init():
    stack = TransformerStack(n_layers=3, d_model=32, n_heads=4)
    init_gpt_weights(stack, n_layers=3)
    out_std = stack.blocks[0].attn.out.weight.std().item()
    assert out_std == pytest.approx(0.02 / 6**0.5, rel=0.15)
    assert stack(torch.randn(2, 7, 32)).shape == (2, 7, 32)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"d_model": 10, "n_heads": 3}, "divisible"),
    ({"d_model": 8, "n_heads": 0}, "n_heads must be an integer >= 1, got 0"),
    ({"d_model": 8, "n_heads": 2, "d_ff": 0}, "d_ff must be an integer >= 1, got 0"),
    ({"d_model": 8, "n_heads": 2, "dropout": 1.0}, r"dropout must be a real number in \[0, 1\)"),
])
def test_bad_dimensions(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TransformerBlock(**kwargs)
    with pytest.raises(TypeError, match="d_model must be an integer"):
        TransformerBlock(8.0, 2)


def test_bad_input_shape_and_type():
    block = TransformerBlock(8, 2)
    with pytest.raises(ValueError, match=r"\(batch, length, 8\)"):
        block(torch.randn(2, 5, 4))
    with pytest.raises(TypeError, match="floating-point"):
        block(torch.ones(2, 5, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="activation"):
        TransformerBlock(8, 2, activation="tanh")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_runs_on_cuda():
    block = TransformerBlock(16, 4, causal=True).cuda()
    assert block(torch.randn(2, 3, 16, device="cuda")).device.type == "cuda"
