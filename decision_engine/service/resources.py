"""What the app holds for its handlers: settings, store, batcher, and the loaded model's version."""

from __future__ import annotations

from dataclasses import dataclass, field

from litestar import Litestar
from litestar.datastructures import State
from litestar.di import NamedDependency

from ..dashboard.session import DashboardSessions
from .batcher import DecisionBatcher
from .settings import ServiceSettings
from .store_gateway import StoreGateway

_STATE_KEY = "resources"

# Handler parameter types: the parameter's name picks the dependency `create_app` provides under it.
SettingsDep = NamedDependency[ServiceSettings]  # settings
StoreDep = NamedDependency[StoreGateway]  # store
BatcherDep = NamedDependency[DecisionBatcher]  # batcher
ModelVersionDep = NamedDependency[str]  # model_version
SessionsDep = NamedDependency[DashboardSessions]  # dashboard_sessions


@dataclass
class ServiceResources:
    """Made by `create_app`, filled by its lifespan; handlers get each part by dependency injection."""

    settings: ServiceSettings
    store: StoreGateway | None = None  # opened by the lifespan
    batcher: DecisionBatcher | None = None  # started by the lifespan, with the model loaded
    model_version: str = ""
    dashboard_sessions: DashboardSessions = field(default_factory=DashboardSessions)

    def provide_settings(self) -> ServiceSettings:
        return self.settings

    def provide_store(self) -> StoreGateway:
        if self.store is None:
            raise RuntimeError("the store is opened when the app starts")
        return self.store

    def provide_batcher(self) -> DecisionBatcher:
        if self.batcher is None:
            raise RuntimeError("the batcher is started when the app starts")
        return self.batcher

    def provide_model_version(self) -> str:
        return self.model_version

    def provide_dashboard_sessions(self) -> DashboardSessions:
        return self.dashboard_sessions

    def state(self) -> State:
        """The app state holding these resources, for the guards and exception handlers injection does not reach."""
        return State({_STATE_KEY: self})


def resources_of(app: Litestar) -> ServiceResources:
    """The resources of an app made by `create_app`."""
    return app.state[_STATE_KEY]
