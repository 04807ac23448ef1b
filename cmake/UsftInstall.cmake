# SPDX-License-Identifier: MIT
# Install rules: filled in by the build/install work.
