import ControlAPI
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = ControlAPIService }
