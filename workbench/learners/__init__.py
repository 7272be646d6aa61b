"""Learners: the registry, the shared counting layer and the learner families."""
