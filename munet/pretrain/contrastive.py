"""A second objective beside the class: tell each image apart from the rest of its batch.

Every image of a batch gets a second view (a random crop of it, rescaled, maybe mirrored);
the model embeds both with a linear projection of its class token (the pretraining head's
last outputs, dropped with the head) and the NT-Xent loss of SimCLR (Chen et al. 2020) asks
each view to find its partner among the 2B - 1 others. A class only asks for the formula, so
its features may forget everything else about an image; telling instances apart asks them to
keep it. Colour is *not* jittered between the views (SimCLR does): colour is one of the things
the features should keep, and jitter would teach them to ignore it.

The views are a pure function of the spec's seed and the step, like the batches.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

# SimCLR's temperature of the cosine similarities (their best, Table 5 of the paper).
TEMPERATURE = 0.1
# The crop's area, as a share of the image, and its aspect ratio, drawn uniformly (the area)
# and log-uniformly (the ratio). SimCLR draws areas from 0.08; a 24 px image has too few pixels
# for that, so the crop keeps at least a quarter.
CROP_AREA = (0.25, 1.0)
CROP_RATIO = (3 / 4, 4 / 3)
# SimCLR's colour distortion at strength s: with this probability the view's brightness,
# contrast and saturation are scaled by factors drawn from [1 - FACTOR_SPREAD s,
# 1 + FACTOR_SPREAD s] and its hue turned by up to HUE_SPREAD s of a full turn; independently,
# the view turns grey with the other.
JITTER_PROBABILITY = 0.8
GREY_PROBABILITY = 0.2
FACTOR_SPREAD = 0.8
HUE_SPREAD = 0.2
# The strongest distortion whose factors stay non-negative (1.25).
MAX_JITTER = 1 / FACTOR_SPREAD
# ITU-R BT.601 luma weights (as torchvision's grayscale).
LUMA = (0.299, 0.587, 0.114)


def second_view(
    images: torch.Tensor, generator: torch.Generator, jitter: float = 0.0
) -> torch.Tensor:
    """Each image (B, 3, S, S), values in [-1, 1], cropped at random (``CROP_AREA``,
    ``CROP_RATIO``), resized back to S x S (bilinear) and mirrored with probability 1/2, then
    colour-jittered at strength ``jitter`` (0: not at all; see ``colour_jitter``);
    ``generator`` lives on the images' device. The crop's draws come first, so a view without
    jitter is the same with or without the option."""
    batch, device = images.shape[0], images.device

    def uniform(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(batch, generator=generator, device=device)

    area = uniform(*CROP_AREA)
    ratio = torch.exp(uniform(math.log(CROP_RATIO[0]), math.log(CROP_RATIO[1])))
    # Width and height of the crop as shares of the image's side, at most the whole side.
    width = torch.sqrt(area * ratio).clamp(max=1.0)
    height = torch.sqrt(area / ratio).clamp(max=1.0)
    # The crop's centre, in [-1, 1] coordinates, keeps the crop inside the image.
    centre_x = uniform(-1.0, 1.0) * (1 - width)
    centre_y = uniform(-1.0, 1.0) * (1 - height)
    mirror = torch.where(torch.rand(batch, generator=generator, device=device) < 0.5, -1.0, 1.0)
    theta = torch.zeros(batch, 2, 3, device=device, dtype=images.dtype)
    theta[:, 0, 0] = width * mirror
    theta[:, 0, 2] = centre_x
    theta[:, 1, 1] = height
    theta[:, 1, 2] = centre_y
    grid = F.affine_grid(theta, list(images.shape), align_corners=False)
    # A crop reaching the image's edge samples up to half a pixel past the outer pixel centres:
    # those take the edge's value, not a zero pad.
    views = F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)
    if jitter:
        views = colour_jitter(views, jitter, generator)
    return views


def _grey(images: torch.Tensor) -> torch.Tensor:
    """Luma of images (B, 3, S, S), as (B, 1, S, S)."""
    weights = torch.tensor(LUMA, dtype=images.dtype, device=images.device)
    return torch.einsum("bchw,c->bhw", images, weights).unsqueeze(1)


def _hue_rotation(angle: torch.Tensor) -> torch.Tensor:
    """Matrices (B, 3, 3) turning RGB colours by ``angle`` (radians) about the grey axis
    (Rodrigues' formula): greys stay, saturated colours cycle red -> green -> blue."""
    axis = torch.full((3,), 3**-0.5, dtype=angle.dtype, device=angle.device)
    # The cross-product matrix of the axis: cross @ v = axis x v.
    signs = torch.tensor([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=angle.dtype)
    cross = signs.to(angle.device) * axis[0]
    cos, sin = angle.cos()[:, None, None], angle.sin()[:, None, None]
    eye = torch.eye(3, dtype=angle.dtype, device=angle.device)
    return cos * eye + sin * cross + (1 - cos) * torch.outer(axis, axis)


def colour_jitter(
    images: torch.Tensor, strength: float, generator: torch.Generator
) -> torch.Tensor:
    """SimCLR's colour distortion (Chen et al. 2020, appendix A) of images (B, 3, S, S) with
    values in [-1, 1]: with ``JITTER_PROBABILITY``, brightness, contrast and saturation scaled
    by factors from [1 - 0.8 s, 1 + 0.8 s] and the hue turned by up to 0.2 s of a turn; then,
    with ``GREY_PROBABILITY``, grey. Values are clipped to the range after each step, as in
    torchvision. Two departures, both for a short, batched form: the four steps run in this
    fixed order (SimCLR shuffles it per image), and the hue turns about the grey axis in RGB
    rather than in HSV."""
    batch, device, dtype = images.shape[0], images.device, images.dtype

    def draw() -> torch.Tensor:
        return torch.rand(batch, generator=generator, device=device, dtype=dtype)

    def factor() -> torch.Tensor:
        return (1 + FACTOR_SPREAD * strength * (2 * draw() - 1))[:, None, None, None]

    jittered, grey = draw() < JITTER_PROBABILITY, draw() < GREY_PROBABILITY
    brightness, contrast, saturation = factor(), factor(), factor()
    angle = 2 * math.pi * HUE_SPREAD * strength * (2 * draw() - 1)
    x = (images + 1) / 2  # [0, 1], where the factors scale as in SimCLR
    out = (x * brightness).clamp(0, 1)
    mean_grey = _grey(out).mean(dim=(2, 3), keepdim=True)
    out = (mean_grey + contrast * (out - mean_grey)).clamp(0, 1)
    grey_now = _grey(out)
    out = (grey_now + saturation * (out - grey_now)).clamp(0, 1)
    out = torch.einsum("bij,bjhw->bihw", _hue_rotation(angle), out).clamp(0, 1)
    out = torch.where(jittered[:, None, None, None], out, x)
    out = torch.where(grey[:, None, None, None], _grey(out).expand_as(out), out)
    return out * 2 - 1


def nt_xent(
    first: torch.Tensor, second: torch.Tensor, temperature: float = TEMPERATURE
) -> torch.Tensor:
    """SimCLR's NT-Xent loss of embeddings (B, D) where ``first[i]`` and ``second[i]`` are
    views of one image: cross-entropy of each of the 2B embeddings finding its partner among
    the other 2B - 1 by cosine similarity / ``temperature``, averaged."""
    batch = first.shape[0]
    embeddings = F.normalize(torch.cat([first, second]).float(), dim=1)
    similarity = embeddings @ embeddings.T / temperature
    # An embedding is not its own candidate.
    eye = torch.eye(2 * batch, dtype=torch.bool, device=similarity.device)
    similarity = similarity.masked_fill(eye, float("-inf"))
    index = torch.arange(batch, device=similarity.device)
    partners = torch.cat([index + batch, index])
    return F.cross_entropy(similarity, partners)
