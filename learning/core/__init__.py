"""The pure core of learned routing: labels, dataset rows, training, metrics, shadow arithmetic.

No database here: the store and the operator routes call these functions.
"""
