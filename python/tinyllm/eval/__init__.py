"""Evaluation: corpus metrics by slice, candidate selection, calculators, reports and plots.
(Room for the evaluation issue; nothing lives here yet.)"""
