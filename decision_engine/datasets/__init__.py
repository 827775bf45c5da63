"""Training and evaluation data: ContractNLI groups and generated linked compliance groups."""
