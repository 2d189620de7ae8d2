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


def second_view(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Each image (B, C, S, S) cropped at random (``CROP_AREA``, ``CROP_RATIO``), resized
    back to S x S (bilinear) and mirrored with probability 1/2; ``generator`` lives on the
    images' device."""
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
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="border", align_corners=False)


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
