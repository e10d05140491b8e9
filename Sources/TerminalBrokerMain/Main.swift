import ServiceKit
import TerminalBroker

@main struct Main: ServiceEntryPoint { typealias Service = TerminalBrokerService }
