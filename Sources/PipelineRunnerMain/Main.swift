import PipelineRunner
import ServiceKit

@main struct Main: ServiceEntryPoint { typealias Service = PipelineRunnerService }
