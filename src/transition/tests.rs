//! Unit tests of the verbs' plans.
