"""The one error type bad input raises: it names the field and the problem."""


class RequestError(ValueError):
    """A request that cannot be decided, with the JSON path of the offending field."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "problem": self.problem}
