"""GD, gradient difference, under the name the SGA paper uses (Liu et al. 2022; SGA paper
appendix A, eq. "GD"): ``-nll(forget) + nll(retain)``. The same method as ``graddiff`` with
the same default (retain weight 1), listed under its paper name."""

from __future__ import annotations

from sga_core.methods.graddiff import GradDiff


class GD(GradDiff):
    name = "gd"
    rank = 21
    title = "GD (gradient difference: forget ascent + retain NLL; = GradDiff)"
