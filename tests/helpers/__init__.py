"""Code the tests share: fakes, strategies, scenarios and paths (imported as ``tests.helpers``)."""
