/**
 * Write agentv code judges in TypeScript or JavaScript (Node >= 20 or Bun, no dependencies).
 *
 * A code judge is any program that reads one JSON payload on stdin and prints one JSON result on
 * stdout. This module reads the payload into a camelCase {@link CodeJudgePayload} (user data
 * untouched), validates the result, calls the eval's model target through agentv's loopback
 * proxy ({@link createTargetClient}) and serves agentv's persistent line protocol
 * ({@link defineCodeJudge}). The names follow `@agentv/eval`, so an existing judge runs by
 * changing its import.
 *
 * It is one file on purpose: `dist/index.js` and `dist/index.d.ts` can be copied next to a judge.
 *
 * ```ts
 * import { createTargetClient, defineCodeJudge } from "./agentv-eval/index.js";
 *
 * defineCodeJudge(async (payload) => {
 *   const target = createTargetClient();
 *   const hits: string[] = [];
 *   if (payload.candidateAnswer.includes("Paris")) hits.push("names Paris");
 *   return { score: hits.length, hits };
 * });
 * ```
 *
 * See docs/judges.md for the payload keys, the result contract, the proxy API and persistent mode.
 */
export declare const VERSION = "0.1.0";
/** Environment variable holding the target proxy's base URL. */
export declare const PROXY_URL_ENV = "AGENTV_TARGET_PROXY_URL";
/** Environment variable holding the target proxy's bearer token. */
export declare const PROXY_TOKEN_ENV = "AGENTV_TARGET_PROXY_TOKEN";
/** Older name of {@link PROXY_URL_ENV}; agentv exports both. */
export declare const JUDGE_PROXY_URL_ENV = "AGENTV_JUDGE_PROXY_URL";
/** Older name of {@link PROXY_TOKEN_ENV}; agentv exports both. */
export declare const JUDGE_PROXY_TOKEN_ENV = "AGENTV_JUDGE_PROXY_TOKEN";
/** Set to `1` by agentv when it wants the judge to serve one JSON line per case. */
export declare const PERSISTENT_ENV = "AGENTV_JUDGE_PERSISTENT";
/** Version of the persistent line protocol this module speaks. */
export declare const PROTOCOL_VERSION = 1;
/** Milliseconds a proxy call may take before it fails. */
export declare const DEFAULT_TIMEOUT_MS = 600000;
export type JsonObject = Record<string, unknown>;
/** The payload is not a JSON object of the code-judge shape; `path` names the wire key. */
export declare class PayloadError extends Error {
    readonly path: string;
    constructor(message: string, path?: string);
}
/** A judge result that agentv would reject (score out of range, NaN, bad details, ...). */
export declare class ResultError extends Error {
    constructor(message: string);
}
/**
 * Why a target proxy call failed: `not_available` (a URL without a token), `status` (the proxy
 * answered with an error status), `connection` (no answer: the proxy is gone or unreachable),
 * `timeout` (no answer in time) or `protocol` (an answer that is not the expected JSON).
 */
export type TargetErrorKind = "not_available" | "status" | "connection" | "timeout" | "protocol";
/** A target proxy call failed; `message` is the proxy's `error` text when it answered. */
export declare class TargetError extends Error {
    readonly kind: TargetErrorKind;
    /** The HTTP status when the proxy answered. */
    readonly statusCode: number | undefined;
    constructor(message: string, kind: TargetErrorKind, statusCode?: number, options?: {
        cause?: unknown;
    });
    /** Same as {@link statusCode}. */
    get status(): number | undefined;
    /** The token was missing or wrong (HTTP 401). */
    get unauthorized(): boolean;
    /** The call budget (`max_calls`) is spent (HTTP 429). */
    get budgetExhausted(): boolean;
    /** The proxy has shut down (HTTP 503) or is no longer listening. */
    get proxyClosed(): boolean;
}
/** The proxy URL is set but its token is not, so no call can be authorized. */
export declare class TargetNotAvailableError extends TargetError {
    constructor(message: string);
}
/** The proxy refused a call, failed, or could not be reached. See `kind` and `statusCode`. */
export declare class TargetInvocationError extends TargetError {
    constructor(message: string, statusCode?: number, kind?: TargetErrorKind, options?: {
        cause?: unknown;
    });
}
/**
 * Finds the first JSON object in a model reply: the whole reply when it is an object; otherwise
 * the first `{` from which a complete JSON object parses, so objects wrapped in prose or in
 * ```json fences are found and a `{` that starts no valid object is skipped. `undefined` when
 * there is none. Mirrors agentv's own reading of LLM judge replies.
 */
export declare function extractJsonObject(text: string): JsonObject | undefined;
/**
 * Message content as text: strings as they are, content-part arrays by their `text` parts joined
 * by newlines, anything else as compact JSON.
 */
export declare function contentText(content: unknown): string;
/** Keys this module does not know, exactly as sent. */
export type Extra = Record<string, unknown>;
export interface TokenUsage {
    input: number;
    output: number;
    cached?: number;
    reasoning?: number;
    extra: Extra;
}
/** One tool invocation. `input` and `output` are the agent's data, untouched. */
export interface ToolCall {
    /** The tool's name exactly as the agent spelled it. */
    tool: string;
    input?: unknown;
    output?: unknown;
    id?: string;
    timestamp?: string;
    startTime?: string;
    endTime?: string;
    durationMs?: number;
    status?: string;
    extra: Extra;
}
/** One message of a transcript. `content` and `metadata` are untouched. */
export interface OutputMessage {
    role: string;
    name?: string;
    content?: unknown;
    toolCalls: ToolCall[];
    id?: string;
    timestamp?: string;
    startTime?: string;
    endTime?: string;
    durationMs?: number;
    metadata?: JsonObject;
    tokenUsage?: TokenUsage;
    extra: Extra;
}
/** One step of the candidate's execution (2.x `candidate_trace`). */
export interface TraceEvent {
    /** `model_step`, `tool_call`, `tool_result`, `message` or `error`. */
    type: string;
    timestamp?: string;
    id?: string;
    name?: string;
    input?: unknown;
    output?: unknown;
    text?: string;
    metadata?: JsonObject;
    extra: Extra;
}
/**
 * Counts over the candidate's trace. 2.x fills `toolNames` and `toolCallsByName`; 4.x fills
 * `toolCalls` (calls per name) and `llmCallCount`. Tool names are map keys exactly as called.
 */
export interface TraceSummary {
    eventCount: number;
    toolNames: string[];
    toolCallsByName: Record<string, number>;
    errorCount: number;
    toolCalls: Record<string, number>;
    toolDurations: Record<string, number[]>;
    llmCallCount?: number;
    tokenUsage?: TokenUsage;
    costUsd?: number;
    durationMs?: number;
    extra: Extra;
}
/** What the candidate's run cost (2.x `execution_metrics`). */
export interface ExecutionMetrics {
    tokenUsage?: TokenUsage;
    costUsd?: number;
    durationMs?: number;
    toolDurations?: Record<string, number[]>;
    toolCallCount?: number;
    explorationRatio?: number;
    tokensPerTool?: number;
    extra: Extra;
}
/** The tool part of a 4.x trace event. */
export interface TraceTool {
    name?: string;
    callId?: string;
    input?: unknown;
    output?: unknown;
    status?: string;
    extra: Extra;
}
/** One event of a 4.x `trace`. */
export interface TraceStep {
    type: string;
    eventId?: string;
    parentEventId?: string;
    ordinal?: number;
    timestamp?: string;
    durationMs?: number;
    message?: unknown;
    tool?: TraceTool;
    metadata?: JsonObject;
    extra: Extra;
}
/** The 4.x `trace` object. */
export interface Trace {
    eventCount?: number;
    toolCalls: Record<string, number>;
    errorCount?: number;
    llmCallCount?: number;
    toolDurations: Record<string, number[]>;
    messages: OutputMessage[];
    events: TraceStep[];
    tokenUsage?: TokenUsage;
    costUsd?: number;
    durationMs?: number;
    startTime?: string;
    endTime?: string;
    metadata?: JsonObject;
    extra: Extra;
}
/**
 * Everything a code judge knows about one graded case, with camelCase property names.
 *
 * agentv sends both key generations: the 2.x keys (`evalId` ... `executionMetrics`) and the 4.x
 * keys (`criteria` ... `workspacePath`); another runtime may send only one set. Absent or null
 * keys read as `""`, `[]`, `{}` or `undefined`. Unknown keys are kept in `extra` under their wire
 * names. User data (message content, tool inputs and outputs, `config`, `metadata`, tool names)
 * is exactly as sent: `config` keys are the evaluator's YAML keys, not camelCased.
 */
export interface CodeJudgePayload {
    evalId: string;
    question: string;
    expectedOutcome: string;
    expectedMessages: unknown[];
    referenceAnswer: string;
    candidateAnswer: string;
    outputMessages: OutputMessage[];
    guidelineFiles: string[];
    inputFiles: string[];
    inputMessages: unknown[];
    traceSummary?: TraceSummary;
    candidateTrace: TraceEvent[];
    executionMetrics?: ExecutionMetrics;
    config: JsonObject;
    criteria: string;
    expectedOutput: unknown[];
    output?: string;
    outputPath?: string;
    messages: OutputMessage[];
    input: unknown[];
    metadata: JsonObject;
    trace?: Trace;
    tokenUsage?: TokenUsage;
    costUsd?: number;
    durationMs?: number;
    startTime?: string;
    endTime?: string;
    fileChanges?: string;
    workspacePath?: string;
    extra: Extra;
}
/** `@agentv/eval`'s name for the payload. */
export type CodeJudgeInput = CodeJudgePayload;
/**
 * Parses a payload: its JSON text (a leading BOM is ignored), its UTF-8 bytes, or an already
 * parsed wire object (snake_case keys).
 */
export declare function parseCodeJudgePayload(input: string | Uint8Array | JsonObject): CodeJudgePayload;
/** Reads all of stdin and parses it as the payload. */
export declare function readCodeJudgePayload(): Promise<CodeJudgePayload>;
/**
 * The candidate's answer, whichever generation sent it: `candidateAnswer`, else `output`, else
 * the JSON string stored at `outputPath` (4.x moves answers over 50 000 characters there), else
 * the last assistant message.
 */
export declare function answerText(payload: CodeJudgePayload): string;
/** What a good answer achieves: `expectedOutcome` (2.x), else `criteria` (4.x). */
export declare function criteriaText(payload: CodeJudgePayload): string;
/** The result agentv reads: `{score, hits?, misses?, reasoning?, details?}`. */
export interface CodeJudgeResult {
    /** A finite number in [0, 1]; anything else is a grader error (agentv does not clamp). */
    score: number;
    hits?: string[];
    misses?: string[];
    reasoning?: string;
    /** Any JSON object, kept verbatim in the results file. */
    details?: JsonObject;
}
/** A 4.x assertion, mapped to a hit (passed) or a miss. */
export interface Assertion {
    text: string;
    passed: boolean;
    evidence?: string;
}
/**
 * What a handler may return: a result, a 4.x-style result (`assertions`, score defaulting to
 * passed / total), an assertion-style `{pass}` (score 1 or 0), or a bare score.
 */
export type JudgeReturn = (Partial<CodeJudgeResult> & {
    assertions?: Assertion[];
    pass?: boolean;
}) | number;
/**
 * Checks a score the way agentv does (docs/architecture.md#scoring): a finite number in [0, 1], else ResultError.
 */
export declare function checkScore(score: unknown): number;
/**
 * Validates what a handler returned and gives the wire result (empty lists and absent values
 * omitted). Throws ResultError when agentv would reject it.
 */
export declare function validateResult(value: unknown): CodeJudgeResult;
/** The score-0 result printed when a judge could not grade. */
export declare function failedResult(message: string): CodeJudgeResult;
/** Validates a result and prints it as one JSON line on stdout. */
export declare function emitResult(result: JudgeReturn): void;
/** One question for the target (`POST /invoke` body, one item of `/invokeBatch`). */
export interface InvokeRequest {
    question: string;
    systemPrompt?: string;
    evalCaseId?: string;
    attempt?: number;
    /** Name of another configured target to route this call to. */
    target?: string;
}
/**
 * The target's answer. In a batch, `error` is set on an item whose call failed (the others are
 * unaffected). `text` is `rawText`, else the last assistant message's text, else `""`.
 */
export interface InvokeResponse {
    outputMessages: OutputMessage[];
    rawText?: string;
    error?: string;
    tokenUsage?: TokenUsage;
    text: string;
    extra: Extra;
}
/** `GET /info`: the default target, the budget, and the targets a call may name. */
export interface ProxyInfo {
    targetName: string;
    maxCalls: number;
    callCount: number;
    availableTargets: string[];
    extra: Extra;
}
export interface TargetClientOptions {
    /** Milliseconds a call may take; default {@link DEFAULT_TIMEOUT_MS}. */
    timeoutMs?: number;
}
/**
 * Calls the eval's model target (or another configured one) through agentv's loopback proxy.
 * The proxy holds the credentials and the call budget; the judge only has a URL and a bearer
 * token valid for the current case. Create it inside the handler: in persistent mode each case
 * has its own proxy.
 */
export declare class TargetClient {
    #private;
    readonly url: string;
    readonly timeoutMs: number;
    constructor(url: string, token: string, options?: TargetClientOptions);
    /**
     * The client for the current case's proxy; `undefined` when the evaluator has no `target`
     * block. Throws TargetNotAvailableError when the URL is set without a token.
     */
    static fromEnv(options?: TargetClientOptions, env?: Record<string, string | undefined>): TargetClient | undefined;
    /** Asks the target one question; counts one call against the budget. */
    invoke(request: InvokeRequest | string, options?: TargetClientOptions): Promise<InvokeResponse>;
    /**
     * Asks several questions in one call; each counts against the budget, and a batch that would
     * pass it is refused whole (status 429). One response per request, in order; a failed item
     * has `error` set.
     */
    invokeBatch(requests: (InvokeRequest | string)[], options?: TargetClientOptions): Promise<InvokeResponse[]>;
    /** The default target's name, the budget, calls so far, and the targets a call may name. */
    getInfo(options?: TargetClientOptions): Promise<ProxyInfo>;
    toJSON(): JsonObject;
    private call;
}
/**
 * The client for the current case's proxy, or `undefined` when the evaluator has no `target`
 * block (as in `@agentv/eval`). Throws TargetNotAvailableError when the URL is set without a
 * token.
 */
export declare function createTargetClient(options?: TargetClientOptions): TargetClient | undefined;
/** A client for an explicit proxy address (tests, tools). */
export declare function createTargetClientInternal(url: string, token: string, options?: TargetClientOptions): TargetClient;
/** What a handler gets besides the payload. */
export interface JudgeContext {
    /** The current case's proxy client, or `undefined` without a `target` block. */
    target: TargetClient | undefined;
}
export type JudgeHandler = (payload: CodeJudgePayload, context: JudgeContext) => JudgeReturn | Promise<JudgeReturn>;
/**
 * Runs a judge handler and exits (as `@agentv/eval`'s `defineCodeJudge`: call it once, at the top
 * level of the judge's module).
 *
 * `handler(payload, { target })` returns a result `{score, hits?, misses?, reasoning?, details?}`
 * (or a 4.x-style result, or a bare score), possibly as a promise.
 *
 * One-shot (the default): reads the payload from stdin, prints the result as one JSON line and
 * exits 0. When the handler throws, or its result is invalid, prints a score-0 result whose miss
 * and reasoning carry the message, and exits 1 (agentv records a grader error).
 *
 * Persistent (`AGENTV_JUDGE_PERSISTENT=1`): announces itself with a ready line, then answers one
 * JSON line per request line until stdin closes; an exception becomes an error line and the judge
 * keeps serving. See docs/judges.md.
 *
 * In both modes stdout belongs to agentv: `console.log` inside the handler goes to stderr.
 */
export declare function defineCodeJudge(handler: JudgeHandler): Promise<never>;
/** `@agentv/sdk` 4.x name of {@link defineCodeJudge}. */
export declare const defineCodeGrader: typeof defineCodeJudge;
/** 4.x assertion style: the handler returns `{pass: boolean}` (or any result); pass → 1, fail → 0. */
export declare const defineAssertion: typeof defineCodeJudge;
