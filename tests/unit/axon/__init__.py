"""Tests of mnemo_axon: declarations, IR and the where: filter compiler."""
