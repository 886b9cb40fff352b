// The plan compiler lives on the state floor (config/routing-plan.ts): the snapshot compiles
// saved configs at load. Re-exported here for the walk and the routes that read plans.
export { compileRoutingPlan, inheritSettings, type ConfigOrigin, type PlanNode } from '../config/routing-plan.ts';
