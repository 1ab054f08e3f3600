//! End-to-end tests of the `agentv` binary, one module per area, in one test binary so it
//! links once. Projects, the binary under a deadline, fake model servers and fake agent CLIs
//! come from the shared kit (`agentv-testkit`).

mod agent_clis;
mod agentv4_cli;
mod batch_mode;
mod batch_providers;
mod broken_runs;
mod composite_aggregators;
mod config_checks;
mod console;
mod convert;
mod cost;
mod custom_assertions;
mod eval_errors;
mod examples;
mod file_generations;
mod first_impressions;
mod graders_deterministic;
mod help;
mod honest_results;
mod init;
mod input_files;
mod judge_crashes;
mod judge_economy;
mod judge_generations;
mod llm_providers;
mod persistent_judges;
mod promptfoo_configs;
mod promptfoo_model_graded;
mod proxy_judges;
mod rate_limits;
mod readme;
mod readme_judges;
mod ready_made_judges;
mod real_agents;
mod results;
mod run_behaviour;
mod runs;
mod schema_command;
mod secrets;
mod signals;
mod targets;
mod tools;
mod validate;
mod workspaces;
