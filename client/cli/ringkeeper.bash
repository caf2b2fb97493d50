# ringkeeper.bash — bash completion for the ringkeeper CLI: its commands, each command's options,
# and the values of the options that take a fixed set (or a file). Installed as
# share/bash-completion/completions/ringkeeper; to try it from a source tree:
#   . client/cli/ringkeeper.bash
# A new command is one line of _ringkeeper_options (its name, then its options);
# tests/cli/test_completion.sh checks them against `ringkeeper --help` and `ringkeeper CMD --help`.

_ringkeeper_server='--server -c --cluster --token --ca-file --timeout'
_ringkeeper_output='-o --output -q --quiet'
declare -gA _ringkeeper_options=(
    [lookup]="--topology --replicas --expect-scheme --expect-hash --expect-vnode-factor --cache --reset-cache --client-id --requests $_ringkeeper_server $_ringkeeper_output"
    [plan]="--from-file --to-file --from --to --max-step --keys --format $_ringkeeper_server $_ringkeeper_output"
    [rollout]="--from-file --to-file --from --to --steps --max-step-moved $_ringkeeper_server $_ringkeeper_output"
    [rollouts]="--id --to-file --steps --max-step-moved --soak --digest --revert $_ringkeeper_server $_ringkeeper_output"
    [simulate]="--keys --from-file --to-file --from --to $_ringkeeper_server $_ringkeeper_output"
    [import]="--nutcracker --pool --nginx --upstream --haproxy --backend"
    [export]="--format --pool --file --version --listen --into --upstream --key --backend --balance --server -c --cluster"
    [publish]="--activate --if-match $_ringkeeper_server $_ringkeeper_output"
    [activate]="--if-match --force $_ringkeeper_server $_ringkeeper_output"
    [revert]="--if-match $_ringkeeper_server $_ringkeeper_output"
    [versions]="--limit $_ringkeeper_server $_ringkeeper_output"
    [show]="$_ringkeeper_server $_ringkeeper_output"
    [watch]="--count --wait $_ringkeeper_server $_ringkeeper_output"
    [approve]="--yes --comment $_ringkeeper_server $_ringkeeper_output"
    [policy]="--max-moved-fraction --max-balance-after --approvals --distinct-approver --migration-window $_ringkeeper_server $_ringkeeper_output"
    [events]="--limit $_ringkeeper_server $_ringkeeper_output"
    [clients]="$_ringkeeper_server $_ringkeeper_output"
    [agent]="--proxy --file --upstream --backend --pool --config --client-id --validate --reload --confirm --pid-file --socket --stats --wait --command-timeout --confirm-timeout --metrics $_ringkeeper_server"
    [migration]="--comment --force $_ringkeeper_server $_ringkeeper_output"
    [migrate]="--worker --before-cutover --to --delete-source --max-step --keys-per-s --bytes-per-s --batch --relay --finish --no-wait --follow --watch --comment $_ringkeeper_server $_ringkeeper_output"
)

# The values an option takes: a word list, "FILE" for a file name, or nothing to type freely.
_ringkeeper_values() { # _ringkeeper_values COMMAND OPTION
    case "$2" in
    -o | --output) echo 'json table' ;;
    --format) [ "$1" = export ] && echo 'nutcracker nginx haproxy' || echo 'text json svg' ;;
    --expect-scheme) echo 'ringkeeper ketama nginx haproxy envoy_ring_hash grpc_ring_hash maglev' ;;
    --proxy) echo 'nginx haproxy nutcracker' ;;
    --distinct-approver | --migration-window) echo 'yes no' ;;
    --topology | --from-file | --to-file | --cache | --ca-file | --nutcracker | --nginx | --haproxy | --file | --into | --config | --pid-file | --socket) echo FILE ;;
    esac
}

_ringkeeper() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} cmd=${COMP_WORDS[1]-}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "${!_ringkeeper_options[*]} --help --version" -- "$cur")
        return
    fi
    [ -n "${_ringkeeper_options[$cmd]+set}" ] || return
    local values
    values=$(_ringkeeper_values "$cmd" "$prev")
    if [ "$values" = FILE ] || { [ "$cmd" = simulate ] && [ "$prev" = --keys ]; }; then
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    elif [ -n "$values" ]; then
        mapfile -t COMPREPLY < <(compgen -W "$values" -- "$cur")
    elif [[ $cur == -* ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${_ringkeeper_options[$cmd]} --help" -- "$cur")
    elif [ "$cmd" = publish ]; then # its operand is a topology file
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    elif [ "$cmd" = policy ] && [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W 'show set' -- "$cur")
    elif [ "$cmd" = migration ] && [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W 'finish' -- "$cur")
    elif [ "$cmd" = migrate ] && [ "$COMP_CWORD" -eq 2 ]; then
        mapfile -t COMPREPLY < <(compgen -W 'run status throttle pause resume cancel verify' -- "$cur")
    fi
}
complete -F _ringkeeper ringkeeper
