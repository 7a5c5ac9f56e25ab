def run(x, w, h, v):
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b + x[:, :4] - torch.cat((x[..., 1:5], x[None, 0, ::2]), 0)[:4]

def run(x, w, h, v):
    return F.conv_transpose2d(w, w.permute(1, 0, 2, 3), stride=2, padding=1, output_padding=1, groups=1, dilation=1)

def run(x, w, h, v):
    return F.conv3d(v.float(), v[:, :, :2, :2, :2].float().transpose(0, 1), padding='same')

def run(x, w, h, v):
    return F.max_pool3d(v, 2, ceil_mode=True), F.avg_pool3d(v, (1, 2, 2), divisor_override=3), F.adaptive_avg_pool3d(v, (1, None, 2))

def run(x, w, h, v):
    return F.scaled_dot_product_attention(h, h, h, is_causal=True), torch.einsum('bij,bjk->bik', h, h.transpose(-1, -2))

def run(x, w, h, v):
    y = torch.softmax(h, dim=-1, dtype=torch.float32) + h.to(torch.bfloat16) * 0.5
    return y.to(h.dtype), torch.max(y, dim=1).values, x.narrow(1, 2, 3).select(0, -1)

def run(x, w, h, v):
    return F.triplet_margin_loss(x, x * 2, x + 1, margin=0.5, swap=True), F.nll_loss(F.log_softmax(x, 1), torch.tensor([0, 1, 2, 3]))

def run(x, w, h, v):
    return torch.stack(torch.split(x, [3, 5], 1)[1].unbind(1), 0), torch.tril(x[:2, :2]) + torch.tensor([[1.0, 2.0], [3.0, 4.0]]), F.dropout(x, 0.5, training=False)

def run(x, w, h, v):
    return x.view(min(x.shape[0], 2), len(x) * max(2, 1)).clone().detach() + torch.zeros(2, 16, dtype=float).float()
