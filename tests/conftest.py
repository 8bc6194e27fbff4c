"""Every test runs with fake AWS credentials and no real AWS endpoint (tests/support/fake_aws.py)."""

import tests.support.fake_aws  # noqa: F401 - sets the environment before anything imports boto3
